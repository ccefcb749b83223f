"""Taking harness prompts apart (culturekb.text.harness_prompt): question, context, options, instructions."""

from __future__ import annotations

import pytest

from culturekb.text.harness_prompt import parse_harness_prompt, prompt_labels
from culturekb.text.languages import instruction_languages


def test_labelled_mcq_with_options_on_their_own_lines():
    p = parse_harness_prompt("Hint: a festival at night.\nQuestion: Why do people light the red lanterns?\nOptions:\n"
                             "A. to honour ancestors\nB. to scare ghosts\n"
                             "Answer with the option's letter from the given choices directly.")
    assert p.question == "Why do people light the red lanterns?" and p.context == "a festival at night."
    assert p.options == ("to honour ancestors", "to scare ghosts")
    assert p.instructions == ("Answer with the option's letter from the given choices directly.",)
    assert p.stem == "Why do people light the red lanterns?\na festival at night."


@pytest.mark.parametrize(("text", "options"), [
    ("What is shown? A. a dragon boat B. a lantern C. a temple", ("a dragon boat", "a lantern", "a temple")),
    ("What is shown?\n(A) rice (B) noodles", ("rice", "noodles")),
    ("What is shown?\nA) rice\nB) noodles\nC) dumplings", ("rice", "noodles", "dumplings")),
    ("Plan A. is fine", ()),  # one letter is no list of options
])
def test_option_forms(text, options):
    p = parse_harness_prompt(text)
    assert p.options == options
    assert p.question.startswith("What is shown?") or not options


def test_instruction_sentences_in_several_languages():
    zh = parse_harness_prompt("问题：这幅画中的满月让人有什么感受？\n选项：\nA. 快乐\nB. 悲伤\n请直接回答选项字母。")
    assert zh.question == "这幅画中的满月让人有什么感受？" and zh.options == ("快乐", "悲伤")
    assert zh.instructions == ("请直接回答选项字母。",)
    mixed = parse_harness_prompt("Which word describes the storm? Answer with one word. The sea is dark.")
    assert mixed.question == "Which word describes the storm? The sea is dark."
    assert mixed.instructions == ("Answer with one word.",)
    es = parse_harness_prompt("Pregunta: ¿Qué muestra la imagen?\nResponde solo con la letra.")
    assert es.question == "¿Qué muestra la imagen?" and es.instructions == ("Responde solo con la letra.",)
    # a whole word only: "Answering machines" is no instruction
    assert parse_harness_prompt("Answering machines hum.").instructions == ()


def test_korean_and_thai_harness_prompts_are_taken_apart():
    ko = parse_harness_prompt("힌트: 밤에 열리는 축제입니다.\n질문: 사람들은 왜 붉은 등불을 밝힐까요?\n"
                              "선택지:\nA. 조상을 기리기 위해\nB. 귀신을 쫓기 위해\n"
                              "주어진 선택지 중에서 정답의 알파벳만 답하세요.")
    assert ko.question == "사람들은 왜 붉은 등불을 밝힐까요?" and ko.context == "밤에 열리는 축제입니다."
    assert ko.options == ("조상을 기리기 위해", "귀신을 쫓기 위해")
    assert ko.instructions == ("주어진 선택지 중에서 정답의 알파벳만 답하세요.",)
    # a label and an opener with its particle written on ("정답을"), as a whole word
    ko = parse_harness_prompt("문제: 이 그림 속 보름달은 어떤 느낌을 주나요?\n보기:\nA. 기쁨\nB. 슬픔\n"
                              "정답을 문자로만 답하세요.")
    assert ko.question == "이 그림 속 보름달은 어떤 느낌을 주나요?" and ko.options == ("기쁨", "슬픔")
    assert ko.instructions == ("정답을 문자로만 답하세요.",)
    th = parse_harness_prompt("โจทย์: ทำไมผู้คนจึงจุดโคมแดง?\nตัวเลือก:\nA. เพื่อบูชาบรรพบุรุษ\nB. เพื่อไล่ผี\n"
                              "ตอบเพียง A หรือ B เท่านั้น")
    assert th.question == "ทำไมผู้คนจึงจุดโคมแดง?" and th.options == ("เพื่อบูชาบรรพบุรุษ", "เพื่อไล่ผี")
    assert th.instructions == ("ตอบเพียง A หรือ B เท่านั้น",)


def test_every_instruction_file_has_the_harness_sections():
    labels = prompt_labels()
    assert {"question", "问题", "options", "hint", "answer", "请"} <= {*labels.question, *labels.options,
                                                                       *labels.context, *labels.openers}
    from culturekb.text.languages import word_list_sections

    for code in instruction_languages():
        sections = word_list_sections(f"languages/instructions/{code}.txt")
        for name in ("question_labels", "option_labels", "context_labels", "instruction_openers"):
            assert sections.get(name), f"culturekb/data/languages/instructions/{code}.txt lacks [{name}]"


def test_a_thai_label_with_the_vowel_am_is_a_label():
    # the word lists are NFKC-normalised (ำ -> ํา); a prompt writes ำ whole: "คำถาม:" (question) is still a label
    p = parse_harness_prompt("คำถาม: ทำไมผู้คนจึงจุดโคมแดง?\nตัวเลือก:\nA. เพื่อบูชาบรรพบุรุษ\nB. เพื่อไล่ผี")
    assert p.question == "ทำไมผู้คนจึงจุดโคมแดง?" and p.options == ("เพื่อบูชาบรรพบุรุษ", "เพื่อไล่ผี")
