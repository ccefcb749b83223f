"""The multiple-choice answer parser: letters in every written form, answer lines in several languages, the option's
text instead of the letter, hedged answers, and what must not be read as a letter."""

import pytest

from culturekb.errors import ConfigError
from culturekb.inference.choices import option_letters, parse_choice

OPTS = ["Backpack", "Handbag", "Tote bag", "Briefcase"]
ZH = ["背包", "手提袋", "手提包", "公文包"]


@pytest.mark.parametrize(("answer", "letter", "path"), [
    ("B", "B", "letter"),
    ("(B)", "B", "letter"),
    ("B.", "B", "letter"),
    ("b", "B", "letter"),
    ("**B**", "B", "letter"),
    ("[C]", "C", "letter"),
    ("Ｄ", "D", "letter"),  # full-width
    ("D) Briefcase", "D", "letter"),
    ("B Handbag", "B", "letter"),
    ("Option C", "C", "letter"),
    ("Answer: B", "B", "answer-line"),
    ("He forgets where it went.\n**Final answer:** (C)", "C", "answer-line"),
    ("Step 1 ... step 2 ...\nAnswer: A\n", "A", "answer-line"),
    ("The answer is D.", "D", "answer-line"),
    ("Answer: handbag", "B", "answer-line"),
    ('{"answer": "D", "reason": "..."}', "D", "json"),
    ("<think>maybe A, maybe B</think>\nC", "C", "letter"),
    ("Handbag", "B", "option-text"),
    ("He will look in the handbag, where he saw it last.", "B", "option-text"),
    # answers in other languages
    ("答案：C", "C", "answer-line"),
    ("答案是D", "D", "answer-line"),
    ("选项B", "B", "letter"),
    ("Respuesta: B", "B", "answer-line"),
    ("La respuesta es c", "C", "answer-line"),
    ("Réponse : (A)", "A", "answer-line"),
    ("الإجابة: ب", "B", "answer-line"),  # Arabic option letter
    ("उत्तर: ग", "C", "answer-line"),  # Devanagari option letter
])
def test_readable_answers(answer, letter, path):
    got = parse_choice(answer, OPTS)
    assert (got.letter, got.path) == (letter, path)
    assert got.index == "ABCD".index(letter)


def test_option_text_in_another_script():
    assert parse_choice("小明会在手提袋里找。", ZH).letter == "B"
    assert parse_choice("背包", ZH).letter == "A"


@pytest.mark.parametrize(("answer", "ambiguous"), [
    ("Answer: A or C", ("A", "C")),
    ("Answer: B/D", ("B", "D")),
    ("Tote bag or briefcase?", ("C", "D")),
    ("It is in the bag somewhere.", ()),
    ("", ()),
    (None, ()),
])
def test_unreadable_or_hedged_answers_are_invalid(answer, ambiguous):
    got = parse_choice(answer, OPTS)
    assert got.letter is None and got.path == "invalid" and not got.valid
    assert got.ambiguous == ambiguous


def test_an_article_is_not_a_letter():
    # "A man ..." starts with the article, not option A; the option text decides
    assert parse_choice("A man would look in the briefcase", OPTS).letter == "D"
    assert parse_choice("A Tote bag", OPTS).letter == "C"  # "A" followed by another option's text


def test_option_count_is_checked():
    assert option_letters(4) == ("A", "B", "C", "D")
    with pytest.raises(ConfigError, match="2 to 26 options"):
        parse_choice("A", ["only one"])


# --- real answers: the final answer wins over a walk-through of the options --------------------------------------
SARAH = ["Sarah apologises", "Sarah leaves", "Sarah laughs", "Sarah explains calmly"]


@pytest.mark.parametrize(("answer", "letter", "path"), [
    # a walk-through of the options, then a conclusion elsewhere
    ("(a) If Sarah apologises, the tension may ease.\n(b) Leaving avoids the talk.\n(c) Laughing is rude.\n"
     "Based on the reasoning, (d)", "D", "conclusion"),
    ("A. Sad: she hides it.\nB. Scared: maybe.\nC. Happy: no.\nD. Calm: no.\n\nAnswer: B", "B", "answer-line"),
    # conclusion phrases, English and Chinese
    ("Given the stakes, the best course of action would be option (d): explain calmly.", "D", "conclusion"),
    ('She wants to keep the peace, so the most appropriate response would be (c): "Sarah laughs".', "C",
     "conclusion"),
    ("I recommend choice (d).\nd", "D", "final-letter"),
    ("最有效的行动是选项(d)", "D", "conclusion"),
    ("最合适的回答是 (d)", "D", "conclusion"),
    ("分析如下。\n因此，选项(d)是最好的选择。", "D", "conclusion"),
    ("因此，最接近她真实感受的选项是C。", "C", "conclusion"),
    ("[答案C]", "C", "marker"),
    ("（c）", "C", "letter"),  # full-width brackets
    ("She would stay.\n\nd", "D", "final-letter"),  # a final bare letter line
    ("Answer:[b] because she wants to leave quietly.", "B", "answer-line"),
    ("Thinking it through ...\n\n[[C]]", "C", "marker"),
    ("The result is \\boxed{B}.", "B", "marker"),
    ("<answer>A</answer>", "A", "marker"),
    ("[答案]\nC. Sarah laughs", "C", "answer-line"),
])
def test_final_answer_wins(answer, letter, path):
    got = parse_choice(answer, SARAH)
    assert (got.letter, got.path) == (letter, path)
    assert got.parse_path == path


TEN = [f"option {i}" for i in range(10)]


@pytest.mark.parametrize(("answer", "letter", "ambiguous"), [
    # a later phrase on the same line is read too, and the last one wins
    ("The answer is not listed, but the closest option is (J).", "J", ()),
    ("The answer is a combination of (B, D, and F), but the most accurate answer would be (B).", "B", ()),
    ("Mass balance again. This is option (G).", "G", ()),
    # a loop of answer lines after the answer (a few-shot pattern written on) is no answer; what came before stands
    ("The rate doubles. The answer is (J).\nThe answer is (A).\nThe answer is (C).\nThe answer is (E).\n"
     "The answer is (J).\nThe answer is", "J", ()),
    ("The answer is (B)\nThe answer is (H)\nThe answer is (E)\n", None, ("B", "H", "E")),
    ("Reasoning.\nThe answer is (A).\nThe answer is (A).\nThe answer is (A).", "A", ()),  # one option: no loop
    # a question is no conclusion; an option taken back in the same sentence is none either
    ("So the answer would be A. Boxes? Or B. A vest?", None, ()),
    ("So the closest answer is (E) 266 ohms, but this is not correct. No option fits.", None, ()),
    ("So the best answer is (D), as she does not know where it is.", "D", ()),
])
def test_phrases_later_on_a_line_loops_and_questions(answer, letter, ambiguous):
    got = parse_choice(answer, TEN)
    assert (got.letter, got.ambiguous) == (letter, ambiguous)


def test_a_model_writing_the_next_turn_is_cut_off():
    answer = "So she leaves.\n[[B]]<|user|>\nNext question ...\n<|assistant|>\n[[D]]"
    assert parse_choice(answer, SARAH).letter == "B"


def test_unfinished_thinking_concludes_nothing():
    unfinished = "Okay, let me think. So perhaps option (A) is better. But wait, maybe"
    assert parse_choice(unfinished, SARAH, thinking=True).letter is None
    assert parse_choice("<think>" + unfinished, SARAH).letter is None
    assert parse_choice(unfinished + ".\nSo the answer is B.", SARAH, thinking=True).letter == "B"  # explicit counts
    # a guess under way is no answer ("maybe the answer is B", "perhaps the most straightforward answer is C")
    assert parse_choice(unfinished + " the answer is B.", SARAH, thinking=True).letter is None
    # after </think> every rule applies; the thinking only for an explicit answer
    assert parse_choice("<think>maybe (A)</think>\nTherefore, (C) is the best choice.", SARAH).letter == "C"


@pytest.mark.parametrize(("answer", "ambiguous"), [
    ("I'm torn between (A) and (D), so maybe (A) or (D).", ("A", "D")),
    ('Therefore the final answer is "C" - Sarah leaves.', ("C", "B")),  # letter and text contradict
    ("The answer is either B or C.", ("B", "C")),
])
def test_hedges_and_contradictions_are_recorded(answer, ambiguous):
    got = parse_choice(answer, SARAH)
    assert got.letter is None and got.path == "invalid"
    assert set(got.ambiguous) == set(ambiguous)


def test_a_rejected_option_is_no_conclusion():
    answer = "She laughs at first.\n(a) is not the best choice here.\nTherefore (b) is correct."
    assert parse_choice(answer, SARAH).letter == "B"
    assert parse_choice("(c) is not correct.", SARAH).letter is None


@pytest.mark.parametrize("n", [2, 3, 5, 6, 15, 26])
def test_any_number_of_options(n):
    options = [f"place {i}" for i in range(n)]
    last = option_letters(n)[-1]
    assert parse_choice(f"The answer is {last}.", options).letter == last
    assert parse_choice(f"Reasoning ...\nTherefore, ({last.lower()}) is the best choice.", options).letter == last
    assert parse_choice(f"{last}. place {n - 1}", options).index == n - 1
    if n < 26:  # a letter beyond the options is no option
        beyond = chr(ord("A") + n)
        assert parse_choice(f"[[{beyond}]]", options).letter is None


def test_numbered_options():
    options = ["red box", "blue box", "green box"]
    assert parse_choice("Answer: 2", options, numbered=True).letter == "B"
    assert parse_choice("(3)", options, numbered=True).index == 2
    assert parse_choice("Answer: 2", options).letter is None  # numbers only when the options are numbered


def test_language_narrows_the_phrases_and_unknown_languages_fail():
    assert parse_choice("因此，选项(d)是最好的选择", SARAH, language="zh").letter == "D"
    assert parse_choice("Por lo tanto, la mejor opción es (b).", SARAH, language="es").letter == "B"
    with pytest.raises(ConfigError, match="no multiple-choice conclusion phrases"):
        parse_choice("B", SARAH, language="tlh")


def test_every_language_has_conclusion_phrases():
    from culturekb.inference._choice_text import CHOICE_LANGUAGES, conclusion_words

    for code in ("ar", "de", "en", "es", "fr", "hi", "ja", "ko", "pt", "ru", "sw", "th", "zh"):
        assert code in CHOICE_LANGUAGES
        words = conclusion_words(code)
        assert words.answer_lead and words.conclusion_cues and words.negations and words.hedges


def test_every_language_file_has_the_optional_sections_too():
    from culturekb.inference._choice_text import _OPTIONAL_SECTIONS, CHOICE_LANGUAGES
    from culturekb.text.languages import word_list_sections

    for code in CHOICE_LANGUAGES:
        sections = word_list_sections(f"languages/choices/{code}.txt")
        assert all(sections.get(name) for name in _OPTIONAL_SECTIONS), code


@pytest.mark.parametrize("thinking", [
    "Die Geschichte zeigt, dass sie traurig ist. Die Antwort ist C.\n\nMoment mal, vielleicht",
    "La historia muestra que está triste, así que la respuesta es C.\n\nUn momento, quizás",
    "이야기를 보면 그녀는 슬퍼합니다. 그러므로 정답은 C입니다.\n\n잠깐, 어쩌면",
    "เรื่องนี้แสดงว่าเธอเศร้า ดังนั้นคำตอบคือ C\n\nเดี๋ยวก่อน บางที",
])
def test_a_thinking_that_takes_its_answer_up_again_is_unsettled_in_other_languages(thinking):
    options = ["box", "basket", "bag", "drawer"]
    assert parse_choice(thinking, options, thinking=True).letter is None
    assert parse_choice(thinking.rsplit("\n\n", 1)[0], options, thinking=True).letter == "C"


KO_OPTS = ["배낭", "핸드백", "토트백", "서류 가방"]
TH_OPTS = ["กระเป๋าเป้", "กระเป๋าถือ", "กระเป๋าผ้า", "กระเป๋าเอกสาร"]


@pytest.mark.parametrize(("language", "answer", "letter"), [
    ("ko", "정답은 (B)입니다.", "B"),
    ("ko", "따라서 가장 적절한 답은 C입니다.", "C"),  # the copula glued to the label (an answer_tail)
    ("ko", "그녀는 휴대폰을 핸드백에 넣었습니다. 그러므로 가장 가능성이 높은 답은 **B**입니다.", "B"),
    ("ko", "B가 정답입니다.", "B"),
    ("ko", "저는 (C)를 선택합니다.", "C"),
    ("ko", "최종 답변은 선택지 D입니다.", "D"),
    ("ko", "정답은 (B)입니다. 왜냐하면 그는 상자를 보지 못했기 때문입니다.", "B"),
    ("ko", "(A)와 (D)는 모두 정답이 아닙니다. 정답은 (C)입니다.", "C"),
    ("ko", "각 선택지를 살펴보겠습니다.\n(A) 배낭은 너무 큽니다.\n(B) 핸드백은 회의에 어울리지 않습니다.\n"
           "(C) 토트백도 가능하지만 덜 격식 있습니다.\n(D) 서류 가방은 출근할 때 씁니다.\n\n"
           "따라서 정답은 (D)입니다.", "D"),  # a walk-through of the options, then the conclusion
    ("ko", "정답은 A 또는 C입니다.", None),  # a hedge
    ("ko", "B는 정답이 아닙니다.", None),  # a negation alone
    ("ko", "(B)는 정답이 아닙니다.", None),
    ("ko", "B가 정답이 아닙니다.", None),  # not the tail "가 정답입니다"
    ("th", "คำตอบคือ ข้อ B", "B"),
    ("th", "คำตอบคือข้อ B", "B"),
    ("th", "ดังนั้น คำตอบที่ถูกต้องคือ (C)", "C"),
    ("th", "คำตอบ: D", "D"),
    ("th", "ผมเลือกตัวเลือก C", "C"),
    ("th", "ตัวเลือกที่เหมาะสมที่สุดคือ D.", "D"),
    ("th", "ข้อ B ถูกต้อง", "B"),
    ("th", "จากเรื่องราว เธอวางโทรศัพท์ไว้ในกระเป๋าถือ ดังนั้นคำตอบที่ถูกต้องคือข้อ B เพราะเธอไม่ได้ย้ายมัน", "B"),
    ("th", "(A) กระเป๋าเป้ ใหญ่เกินไป\n(B) กระเป๋าถือ ไม่เหมาะกับการประชุม\n(C) กระเป๋าผ้า ใช้ได้แต่ไม่เป็นทางการ\n"
           "(D) กระเป๋าเอกสาร เหมาะกับการทำงาน\n\nดังนั้น คำตอบคือ ข้อ D", "D"),
    ("th", "อาจเป็น A หรือ C", None),  # a hedge
    ("th", "ข้อ B ไม่ถูกต้อง", None),  # a negation alone
    ("th", "(B) ไม่ใช่คำตอบที่ถูกต้อง", None),
])
def test_korean_and_thai_answers_are_read(language, answer, letter):
    options = KO_OPTS if language == "ko" else TH_OPTS
    for narrowed in (language, None):  # the language's phrases, and every language's
        assert parse_choice(answer, options, language=narrowed).letter == letter, narrowed



@pytest.mark.parametrize(("answer", "letter"), [
    ("A입니다.", "A"), ("C입니다. \n\n 이유는 다음과 같습니다.", "C"), ("정답은 C: 0.1입니다.", "C"),
    ("B를 선택합니다.", "B"), ("정답은 B이며, 그 이유는 다음과 같습니다.", "B"), ("Aです。", "A"),
    ("Bが正解です。", "B"), ("คำตอบคือ A ซึ่งถูกต้อง", "A"),
    ("A는 정답이 아닙니다.", None), ("Aではありません。", None), ("비타민 A가 부족하면 문제가 생깁니다.", None),
    ("(A) 또는 (C)", None), ("คำตอบคือ (A) หรือ (C)", None),  # hedges with the language's own "or"
])
def test_a_label_touching_korean_japanese_or_thai_words(answer, letter):
    """Real Korean answers (KMMLU, benchmarks/results/parser_real_answers_ko_pt.md) glue the copula to the label:
    "A입니다." was read as none in 40% of Llama-3.1-8B's answers."""
    got = parse_choice(answer, ["x", "y", "z", "w"])
    assert got.letter == letter
    if answer.startswith("(A) "):
        assert got.ambiguous == ("A", "C")


def test_a_calculation_in_korean_or_russian_with_greek_letters_is_no_noise():
    korean = ("자기 저항을 구하는 공식:\n\nR = l / (μ₀ × μᵣ × A)\n\n계산:\n\nR = 0.8 / (4π × 10⁻⁷ × 8)\n\n"
              "R ≈ 7.96 × 10⁴ [AT/Wb]\n\nC")
    russian = "Рассчитаем сопротивление: R = 0.8 / (4π × 10⁻⁷ × 8), μ = 20, значит R ≈ 7.96 × 10⁴.\n\nC"
    for text in (korean, russian):
        assert parse_choice(text, ["", "", "", ""]).letter == "C"
    # noise in other scripts after a Korean answer still ends what is read
    from culturekb.inference._noise import degenerate_start
    noisy = korean.replace("\n\nC", "") + " Голов analyst رفعoci auf ส่ง mpbdssv" * 4
    assert degenerate_start(noisy) is not None and degenerate_start(korean) is None



@pytest.mark.parametrize(("answer", "letter", "ambiguous"), [
    ("e\n\n**解説:**\n\nA群β溶連菌の迅速抗体検査は…**38℃以上の高熱**が最も重要です。", "E", ()),  # first line, then why
    ("B. Paris\n\nExplanation: A is wrong, so C is unlikely too.", "B", ()),
    ("B\n\nExplanation: on reflection the answer is C.", "C", ()),  # an explicit answer in it still revises
    ("正解は **d** です。\n\n**解説:**\n\n*   **a: 乳癌 --- 飲酒習慣:** アルコールの摂取は", "D", ()),  # a bullet
    ("b<unused95>答え: b", "B", ()), ("c<|END_RESPONSE|>", "C", ()),  # MedGemma's and Command-R's tokens
    ("正解は c です。", "C", ()), ("解答：e", "E", ()), ("正解は c ではありません。", None, ()),
    ("d,e", None, ("D", "E")), ("a, e\n", None, ("A", "E")), ("Resposta: A, C e E.", None, ("A", "C", "E")),
    ("b\ne", None, ("B", "E")), ("a, b\n\n答え: a, b", None, ("A", "B")),
    ("a, b, c, d\n最も適切な答えは：a, b, c, dです。", None, ("A", "B", "C", "D")),
    ("c<unused95>c", "C", ()), ("<unused94>thought\n問題を確認します。選択肢はa: x1,", None, ()),  # MedGemma thinking
    ("正解は **d** です。\n\n**解説:**\n\n*   **a: x1 は** 正しい組合せです。", "D", ()),  # a bullet on option a
    ("d: w1\n\nこの症例では、血友病Aと診断され…", "D", ()),  # the label and its option's text first
])
def test_japanese_exam_answers(answer, letter, ambiguous):
    """Found on Japanese answers to the medical licensing examination (benchmarks/results/parser_real_answers_ja.md):
    options a-e, the answer first and an explanation after, several letters for one answer."""
    got = parse_choice(answer, ["x1", "y1", "z1", "w1", "v1"])
    assert (got.letter, got.ambiguous) == (letter, ambiguous)


# fixes found by reading real answers by hand (benchmarks/results/parser_real_answers_handread.md)
def test_any_special_token_ends_the_models_turn():
    options = ["box", "basket", "bag", "drawer"]
    assert parse_choice("[[B]] <|结束_header_id|> \nC <|结束_header_id|> [[C]]", options).letter == "B"
    assert parse_choice("[[D]]| Joined.|<|end_user|>\n答案最可能的是： [[C]]", options).letter == "D"
    assert parse_choice("[[C]]<|超出输出长度|>[[D]]", options).letter == "C"
    assert parse_choice("Answer: A ‹|结束_header_id|> Answer: B", options).letter == "A"
    # the thinking brackets some reasoning models write are inside their own turn
    assert parse_choice("<|begin_of_thought|> hmm <|end_of_thought|> The answer is C.", options).letter == "C"


def test_adjacent_markers_of_two_options_are_a_hedge():
    options = ["box", "basket", "bag", "drawer"]
    got = parse_choice("[[B]] [[D]]", options)
    assert got.letter is None and got.ambiguous == ("B", "D")
    assert parse_choice("[[B]] [[B]]", options).letter == "B"
    assert parse_choice("First [[B]]. On reflection the final answer is [[D]].", options).letter == "D"


def test_more_brackets_and_answer_phrases():
    options = ["box", "basket", "bag", "drawer"]
    assert parse_choice("〔D〕因为他没有看到", options).letter == "D"
    assert parse_choice("所以他会去找。故选B", options, language="zh").letter == "B"
    assert parse_choice("分析完毕。故:C. 篮子", options, language="zh").letter == "C"
    assert parse_choice("After the calculation, the closest option is (A).", options).letter == "A"
    thinking = "Hmm, B or D. I think the most likely answer is D.\n</think>\n\nStep-by-step: 1. The question asks"
    assert parse_choice(thinking, options, thinking=True).letter == "D"


def test_noise_after_a_clean_answer_does_not_override_it():
    options = ["box", "basket", "bag", "drawer"]
    noise = " chанные constituent ถ้า Justin مربوط Pierre 相 LAB Stem 答案 B 最接近 ACCESSDENIED 1 1"
    assert parse_choice("[答案]\n[[C]]，因为他离开了。" + noise * 3 + " 最终答案是[[D]]", options).letter == "C"
    # noise with no answer stays invalid, whatever letters float in it
    assert parse_choice("امکان 张伟 toastr teamworkασίαςurm Ж周 교 AP (B) le classes (C)" * 3, options).letter is None
    # a clean answer with no noise is unaffected
    assert parse_choice("He left before it moved, so he looks in the box. Answer: A", options).letter == "A"


def test_a_stray_end_token_before_any_answer_does_not_end_the_turn():
    options = ["box", "basket", "bag", "drawer"]
    # damaged decoding writes </s> and reserved tokens by the dozen; the turn ends at one only once an option is named
    assert parse_choice("[张涛向</s> 李晓讲<|reserved_special_token_216|>他</s>最可能的答案是：\n[[A]]</s>[[C]]",
                        options).letter == "A"
    assert parse_choice("So he looks in the bag.</s> Maybe the drawer, or the box.", options).letter == "C"
    assert parse_choice("[[C]]</s> The answer is D.", options).letter == "C"
    # a role token always starts someone else's turn, answer or not
    assert parse_choice("Let me think about it.\n<|user|>\nThe answer is B.", options).letter is None


def test_a_header_token_inside_a_sentence_starts_no_turn():
    options = ["box", "basket", "bag", "drawer"]
    # round 11: a header token dropped into a sentence, the sentence going on after it, and the answer later
    text = "推理一：她表演得十分传神<|start_header_id|>说明她对演技的投入。\n\n答案:C."
    assert parse_choice(text, options).letter == "C"
    # a header that names a role still starts that role's turn
    header = "Let me think.<|start_header_id|>user<|end_header_id|>\nThe answer is C."
    assert parse_choice(header, options).letter is None
    assert parse_choice("Let me think.\n<|start_header_id|>\nThe answer is C.", options).letter is None


def test_an_answer_stated_after_an_end_token_beats_an_option_word_before_it():
    options = ["高兴", "担忧", "兴奋", "平静"]
    # rounds 8 and 9 of the hand reading: the option word was met in the reasoning, the answer came after the token
    text = "推理：她想保护弟弟不受爸爸的担忧，但另一方面也很为难。<|结束请求|>\n\n[[D]]<|结束输出|> 最终答案是 [[D]]."
    assert parse_choice(text, options).letter == "D"
    assert parse_choice(text.split("<|结束请求|>")[0], options).letter == "B"  # alone, the word is all there is
    # what comes after the token must state an answer (a marker, an answer line), not pass by an option's word
    assert parse_choice("推理：她想保护弟弟不受爸爸的担忧。<|结束请求|> 她很平静地走了", options).letter == "B"
    # nor ask another question
    other = "推理：她很担忧。<|结束请求|>\n[问题] 小明会怎么做？\nA. 7\nB. 10\n[[A]]"
    assert parse_choice(other, options).letter == "B"


def test_absolute_values_in_inline_math_are_no_end_token():
    options = ["3", "5", "7", "9"]
    text = "My first answer was (B).\nBut we need $|n| < |n-3| < 9$, which leaves n = 7 only. The answer is (C)."
    assert parse_choice(text, options).letter == "C"  # (a garbled token "< |n-3|" would end the turn after B)
    assert parse_choice("[[B]] < |结束| > The answer is (C).", options).letter == "B"  # outside math it is one


def test_an_explicit_answer_after_noise_beats_an_option_word_before_it():
    options = ["内疚", "兴奋", "紧张", "感激"]
    noise = " _modules_user/model_case_initializ|> маленький人生 Refriger precautions Fox ثم ฉัน 의 Ж"
    answer = "老师可能会感到紧张，但学生会兴奋吗？" + noise * 2 + "因此，我认为学生们最可能的心情是:[A].\n[[A]]"
    assert parse_choice(answer, options).letter == "A"


def test_short_chinese_answers_and_stray_brackets():
    options = ["box", "basket", "bag", "drawer"]
    assert parse_choice("[步骤 1]: 我们的答案。为C。\n因为他离开了。", options).letter == "C"
    assert parse_choice("因为C选项提到了篮子", options).letter is None  # 因为 ("because") is no answer
    assert parse_choice("经过分析。\n\n选择项：D]]", options).letter == "D"
    assert parse_choice("]=[B].", options).letter == "B"


def test_hedges_settled_by_an_answer_beside_them_and_a_bracketed_hedge():
    options = ["box", "basket", "bag", "drawer"]
    noise = " ितक_name ‚ Stephan OnePlus πέщих )), epith<Double Ivan ثم ฉัน 의 Ж" * 2
    assert parse_choice("我的回答是 'A.' [[A]]\n[[D]]" + noise, options).letter == "A"
    settled = "分析" + noise + "\n[[A]] \n[[D]]  # 最终的最可能的答案序号是 [[D]]。" + noise
    assert parse_choice(settled, options).letter == "D"
    got = parse_choice("[[B, D]]", options)
    assert got.letter is None and got.ambiguous == ("B", "D")


def test_a_finished_thinking_keeps_its_last_answer_phrase_even_when_hedged():
    options = ["box", "basket", "bag", "drawer"]
    text = "Hmm. B or D? Maybe the intended answer is D, as it fits best.\n</think>\n\n[Xiao"
    assert parse_choice(text, options, thinking=True).letter == "D"
    # unfinished, the same phrase is a guess under way
    assert parse_choice(text.split("</think>")[0], options, thinking=True).letter is None


def test_a_finished_thinking_keeps_its_closing_conclusion():
    options = ["box", "basket", "bag", "drawer"]
    text = ("Option B is possible.\n\nSo, between A, B, C, D. Not sure yet. Leaving early could mean he wants to go, "
            "and not stay, so D is the most likely.\n</think>\n\nXiao")
    assert parse_choice(text, options, thinking=True).letter == "D"
    # only its last paragraph closes the thinking: a conclusion earlier on, then more weighing, is not read
    earlier = "So D is the most likely.\n\nBut wait, B could be it too. Hard to say.\n</think>\n\nXiao"
    assert parse_choice(earlier, options, thinking=True).letter is None
    # unfinished, it is no answer
    assert parse_choice(text.split("</think>")[0], options, thinking=True).letter is None


@pytest.mark.parametrize(("answer", "letter"), [
    ("I weighed them all. So D is the most likely.", "D"),
    ("After reading the story, I think C is the best option here.", "C"),
    ("Looking at it again, B is correct.", "B"),
    ("A or D is the most likely.", None),  # a hedge
    ("Honestly, D is not the most likely.", None),
    ("So is D the most likely?", None),
])
def test_a_capital_before_a_tail_phrase_concludes(answer, letter):
    assert parse_choice(answer, ["box", "basket", "bag", "drawer"]).letter == letter


def test_a_list_of_markers_is_no_answer_and_a_pair_is_settled_by_the_line_before():
    options = ["box", "basket", "bag", "drawer"]
    got = parse_choice("[[B]]\n[[C]]\n[[D]]", options)
    assert got.letter is None and got.ambiguous == ("B", "C", "D")
    assert parse_choice("最有可能的选项是B。\n\n[[B]]([[D]])", options).letter == "B"
    # an answer line whose value is the pair itself settles nothing
    got = parse_choice("最终答案：[[A]] [[D]]", options)
    assert got.letter is None and set(got.ambiguous) == {"A", "D"}
    # a bare final letter after a pair still settles it
    assert parse_choice("[[A]] [[D]]\nD", options).letter == "D"


def test_markers_naming_every_option_list_them_and_revise_nothing():
    options = ["box", "basket", "bag", "drawer"]
    echo = ('The most likely answer is D.\n\n[[D]]\nAlternatively, if there is not enough information, randomly '
            'output one of "[[A]]", "[[B]]", "[[C]]", or "[[D]]".')
    assert parse_choice(echo, options).letter == "D"
    alone = parse_choice("[[A]] [[B]] [[C]] [[D]]", options)
    assert alone.letter is None and alone.ambiguous == ("A", "B", "C", "D")
    # a line of markers is no final letter; one marker after it is
    assert parse_choice("The answer is C.\n[[A]] [[B]] [[C]] [[D]]", options).letter == "C"
    assert parse_choice("Options:\n[[A]] [[B]] [[C]] [[D]]\n\n[[A]]", options).letter == "A"


def test_an_echoed_marker_list_is_no_hedge_beside_a_stated_answer():
    options = ["box", "basket", "bag", "drawer"]
    # round 10: a conclusion and then nothing explicit but the instruction's list of markers
    assert parse_choice("只有A选项最符合上述分析。\n\n[[A]] [[B]] [[C]] [[D]]", options).letter == "A"
    # ... or an option's whole text written on a line of its own beside the list
    assert parse_choice("因此：\n[[A]] [[B]] [[C]] [[D]]\nbox\n", options).letter == "A"
    assert parse_choice("结果：\nA. box\n[[A]]；[[B]]；[[C]]；[[D]]", options).letter == "A"
    # an option's word met in passing is not enough: the list stays a hedge
    passing = parse_choice("他把它放进了bag，然后离开了。\n[[A]] [[B]] [[C]] [[D]]", options)
    assert passing.letter is None and passing.ambiguous == ("A", "B", "C", "D")
    # in noise: a list after the answer revises nothing when the other answers agree ...
    noise = " шт Ž 欧 ที่ قرا ö Ж 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"
    assert parse_choice("[[A]]。最可能的答案选项为“A”。\n[[A]]，\n[[B]]，\n[[C]]和[[D]]，" + noise,
                        options).letter == "A"
    # ... but where single markers of several options go with the lists, the last of them is no answer
    mixed = ("所以最可能的答案是 withheld\n-[[A]]</|assistant|> [[C]]</|assistant|> [[D]]</|assistant|>\n"
             "[[A]]，[[B]]，[[C]]和[[D]]")
    assert parse_choice(mixed + noise, options).letter is None


def test_a_letter_glued_to_an_identifier_is_no_label():
    options = ["box", "basket", "bag", "drawer"]
    assert parse_choice("Let me see.\n[[D_test]]", options).letter is None
    assert parse_choice("Let me see.\n_D_", options).letter == "D"  # markdown emphasis still closes a label


def test_answer_tags_are_the_answer_not_the_end_of_the_turn():
    options = ["box", "basket", "bag", "drawer"]
    assert parse_choice("选项D是合理的推测。\n[[D]] [[A]] [[B]] [[C]]<|answer|>[[D]]<|/answer|>", options).letter == "D"
    assert parse_choice("推测有35个。\n[[B]] [[A]] [[C]] [[D]]<|response|>[[B]]<|system|>[[C]]", options).letter == "B"
    # a line of markers: the first picks unless they stand in label order (a listing)
    assert parse_choice("Thinking it over.\n[[D]] [[A]] [[B]] [[C]]", options).letter == "D"
    assert parse_choice("The answer is D, [[D]].\n[[A]] [[B]] [[C]] [[D]]", options).letter == "D"


def test_a_thinking_cut_off_after_taking_its_answer_up_again_settled_on_nothing():
    options = ["box", "basket", "bag", "drawer"]
    reopened = "Let me see who moved it.\n\nThus, the answer is C.\n\nWait, maybe I'm overcomplicating. Rolling"
    assert parse_choice(reopened, options, thinking=True).letter is None
    assert parse_choice("他拿走了篮子。所以答案是B。\n\n不过，也可能是", options, thinking=True).letter is None
    # nothing taken up again after it (the thinking was cut off right after its answer): the answer stands
    assert parse_choice("He moved it last.\n\nSo the answer is C.\n\nC is the", options, thinking=True).letter == "C"
    # a thinking that reached </think> settled, whatever it weighed before
    assert parse_choice("So the answer is C. Wait, yes.\n</think>\n\n", options).letter == "C"


def test_one_options_marker_looping_in_noise_is_the_answer():
    options = ["box", "basket", "bag", "drawer"]
    loop = "最合适的答案是[[B]]。[[A]]不对。[[D]]也不对。\n" + "[[B]] \n" * 40
    assert parse_choice(loop, options).letter == "B"


def test_a_hedge_before_an_end_token_is_settled_only_on_one_of_its_options():
    options = ["box", "basket", "bag", "drawer"]
    hedge = "最可能的答案是[[B]]或[[C]]。<|/system|> "
    assert parse_choice(hedge + "答案序号：[[B]]\n答案序号：[[B]]", options).letter == "B"
    other = parse_choice(hedge + "答案序号：[[D]]", options)
    assert other.letter is None and other.ambiguous == ("B", "C")


def test_part_labels_of_a_multi_part_question_are_no_options():
    options = ["320 volts", "340 volts", "315 volts", "310 volts"]
    cut = ("Let us work it out. 1(a) The power is P = VI, so V = 1500 volts. 2(b) The alternating current is the "
           "voltage divided by the resistance, and so the direct current is the")
    assert parse_choice(cut, options).letter is None


def test_an_answer_that_ends_saying_no_option_is_right_is_read_as_none():
    options = ["green_pantry", "red_bottle", "red_box", "green_bottle"]
    text = ("According to the story, Jack moved the apple to the green_bottle and then exited the den. Nobody else "
            "entered before the agents left, so only Jack knows where it is, and Evelyn never spoke to him. "
            "Therefore, the answer is not given in the story and cannot be determined.")
    assert parse_choice(text, options).letter is None
    assert parse_choice(text.replace("the answer is not given in the story and cannot be determined",
                                     "Evelyn thinks it is in the green_bottle"), options).letter == "D"
    assert parse_choice(text.replace("the answer is not given in the story and cannot be determined",
                                     "we cannot answer the question"), options).letter is None


def test_a_role_token_before_any_word_ends_no_turn():
    options = ["box", "basket", "bag", "drawer"]
    assert parse_choice("```<|user|> Step 1: read the story.\nSo, it should be: [[D]]", options).letter == "D"


def test_one_options_marker_repeated_after_an_end_token_revises_the_answer_before_it():
    options = ["box", "basket", "bag", "drawer"]
    revised = "[[D]]<|user||\n但是答案应该是 A，因为她说错了。\n" + "答案序号如下：[[A]]\n" * 5
    assert parse_choice(revised, options).letter == "A"
    # one answer to another question after the token revises nothing
    other = "[[D]]</s>\n下一题：小明有几个苹果？答案：[[B]]"
    assert parse_choice(other, options).letter == "D"


def test_what_the_model_concedes_in_turns_it_wrote_for_others_revises_no_answer():
    options = ["box", "basket", "bag", "drawer"]
    cases = [
        # a chat server stops at the end of the model's turn: the user it invents, and what it concedes, came after
        ("他会去篮子里找。\n[[B]]<|user|>你确定吗？故事里他看到了袋子。<|assistant|>\n您说得对，重新考虑后，最合理的答案是C。\n[[C]]",
         "B"),
        ("最合理的答案是B。[[B]]<|system|>答案有误，应该是袋子。<|assistant|>重新考虑后，最合理的答案是C。[[C]]", "B"),
        # an own turn that was only a marker leaves the answer to what follows it
        ("[[B]] <|system|>\n答案解析：他看到了袋子，最合理的答案是C。\n最终答案：[[C]]", "C"),
        # the model's own turn going on (a new assistant header) still re-answers
        ("[[B]]<|im_end|>\n<|im_start|>assistant\n重新考虑后，最合理的答案是C。[[C]]", "C"),
        # another question (a header, a hypothetical asked as the user) is not this one's answer
        ("[[B]]<|user|>\n[故事]\n小明有三个苹果。\n[问题]\n他有几个？<|assistant|>\n[[D]]", "B"),
        ("[[B]]<|user|>如果她没有看到袋子，应该怎样推理？<|assistant|>\n那么答案是[[A]]", "B"),
        # a marker after a farewell closes the conversation; it is no answer
        ("[[B]]<|system|>答案正确。<|user|>谢谢<|assistant|>不客气！祝你愉快。[[D]]", "B"),
        # words the model writes for the user before it has answered are not its answer
        ("Let me think.\n<|user|>\nThe answer is B.", None),
    ]
    for answer, read in cases:
        assert parse_choice(answer, options).letter == read, answer


def test_an_or_right_after_an_end_token_joins_the_markers_around_it_into_a_hedge():
    options = ["box", "basket", "bag", "drawer"]
    hedged = parse_choice("[[D]]<|line|>或者 [[A]]<|line|> 2019 Reviewed Lyn", options)
    assert hedged.letter is None and set(hedged.ambiguous) == {"A", "D"}
    # without the "or" the end token still ends the turn
    assert parse_choice("[[D]]<|eot_id|>[[A]] 其他", options).letter == "D"
    # a later answer on one of the two settles the hedge
    settled = "[[A]]<|enduser|> 或者 [[D]]。我们认为最可能的答案选项是 [[A]]。因为A项更多地关联于内在奖励。"
    assert parse_choice(settled, options).letter == "A"


def test_every_options_marker_looping_in_order_revises_no_answer():
    options = ["box", "basket", "bag", "drawer"]
    loop = " ".join(f"<[[{letter}]]>" for letter in "ABCD" * 5) + " <[[A]]> <[[B]]> <"
    assert parse_choice("最终答案为[[A]]。 " + loop, options).letter == "A"  # not the B the loop stops at
    assert parse_choice("最终答案为[[A]]。\n不对，应该是[[B]]", options).letter == "B"


def test_a_long_run_of_one_options_marker_after_an_end_token_revises_the_answer():
    options = ["box", "basket", "bag", "drawer"]
    settled = "[[D]] 我选D。<|change_end|>\n[[D]] 也许。\n" + "因此，最终答案是[[C]]。[[C]]\n" * 5
    assert parse_choice(settled, options).letter == "C"  # ten C markers against two D ones
    # a short run does not outweigh the others
    assert parse_choice("[[D]] 我选D。<|change_end|>\n[[D]] [[A]] [[C]] [[C]] [[C]]", options).letter == "D"


@pytest.mark.parametrize(("answer", "letter"), [
    ("I think the answer is D based on the table.", "D"),
    ("Answer: B since the bag was moved.", "B"),
    ("答案：C Choosing候选答案因为该选项", "C"),
    ("The answer is A because she saw it.", "A"),  # "A" before a word such as "because"
])
def test_a_capital_label_before_words_in_an_answer_value_is_the_label(answer, letter):
    assert parse_choice(answer, OPTS).letter == letter


@pytest.mark.parametrize("answer", [
    "The answer is A dog barking in the yard.",  # "A" opens an ordinary phrase
    "最可能的答案是 C 吗？不。",  # asks, does not answer
    "The answer is B and C are both wrong.",  # a connector after the label
])
def test_a_capital_before_words_is_not_read_where_it_opens_words_asks_or_joins(answer):
    assert parse_choice(answer, OPTS).letter is None


def test_markers_joined_by_a_connector_of_any_language_are_one_hedge():
    hedged = parse_choice("[[A]]，[[B]]，[[C]] và [[D]] sacked! 1 2 3", OPTS)
    assert hedged.letter is None and set(hedged.ambiguous) == set("ABCD")
    assert set(parse_choice("[[B]] y [[C]]", OPTS).ambiguous) == {"B", "C"}


def test_a_confirmation_right_after_a_pair_of_markers_settles_it():
    answer = '所以，可能是：\n[[B]] [[A]] (这里的表示可能有误，我们确认是"B"]'
    assert parse_choice(answer, OPTS).letter == "B"


ZH_LONG = ["妈妈在暗示她可能需要改变晚餐的菜单。", "妈妈在抱怨李明没有及时补充食材。", "妈妈想告诉李明鸡蛋用完了。",
           "妈妈希望李明去买一些鸡蛋回来。"]


def test_an_answer_that_names_nothing_but_restates_one_option_in_other_words_chose_it():
    answer = ("我认为妈妈说这些话时，真正想说的意思是她希望李明去mall或者附近的超市买一些鸡蛋回来。\n"
              "这个推理过程就是这样。")
    got = parse_choice(answer, ZH_LONG)
    assert (got.letter, got.path) == ("D", "option-text")


@pytest.mark.parametrize("answer", [
    "她希望李明去附近的超市买一些鸡蛋回来吗？不一定。",  # asks
    "妈妈不是希望李明去买一些鸡蛋回来，也不是在抱怨李明没有及时补充食材。",  # negates
    "也许她希望李明去超市买一些鸡蛋回来。也可能她在抱怨李明没有及时补充食材。",  # two options restated: no choice
    "<think>她希望李明去超市买一些鸡蛋回来",  # unfinished thinking: only explicit answers count
])
def test_a_restatement_that_asks_negates_or_disagrees_chooses_nothing(answer):
    assert parse_choice(answer, ZH_LONG).letter is None


def test_a_restatement_in_a_turn_the_model_wrote_for_the_user_does_not_count():
    answer = "这很难说。\n<|user|>\n她希望李明去超市买一些鸡蛋回来。"
    assert parse_choice(answer, ZH_LONG).letter is None


@pytest.mark.parametrize(("answer", "letter"), [
    ("The answer is likely C because the bag was moved.", "C"),
    ("The answer is probably (B).", "B"),
])
def test_a_degree_word_between_the_answer_phrase_and_the_label_is_passed_over(answer, letter):
    assert parse_choice(answer, OPTS).letter == letter


def test_a_marker_under_a_condition_is_no_answer_beside_an_unconditional_one():
    fallback = "最终答案：[[A]]。如果没有足够信息，选择[[D]]是随机选择的。"
    assert parse_choice(fallback, OPTS).letter == "A"
    runner_up = "The final answer is [[B]]. Had we not inferred this nuance, [[C]] would have been a close second."
    assert parse_choice(runner_up, OPTS).letter == "B"
    # a conditional answer that is the only one still counts
    assert parse_choice("如果只能选一个，我选[[C]]。", OPTS).letter == "C"
    # and an unconditional later answer still revises an earlier one
    assert parse_choice("[[A]]。如果不对呢？再想想，最终答案是[[B]]", OPTS).letter == "B"


def test_an_answer_value_that_lists_the_options_chooses_none():
    listed = parse_choice("So the answer is likely: A. Backpack, B. Handbag, C. Tote bag, D. Briefcase", OPTS)
    assert listed.letter is None and set(listed.ambiguous) == set("ABCD")


def test_another_question_the_model_poses_after_answering_is_not_read():
    options = ["因为肚子疼", "因为害怕妈妈担心", "因为她不喜欢聚会", "她不能参加聚会了"]
    answer = ("因此最可能的答案为：\n[[B]] <<= 合理答案\n"
              "[[B]]igneoussystem>以下给你几个选项，请选择一个和'打开计算机'相似的动作：\n\n"
              "A. 关上窗户\n\nB. 关上冰箱门\n\nC. 关上门\n\nD. 关上风扇盖\n\n"
              "最相似的动作是\"C. 关上门\"。答案是：[[C]]。")
    assert parse_choice(answer, options).letter == "B"
    # a walk-through of this question's own options is no other question
    walk = "[[A]]\nA. 因为肚子疼\nB. 因为害怕妈妈担心\nC. 因为她不喜欢聚会\n所以答案是[[C]]"
    assert parse_choice(walk, options).letter == "C"


def test_an_answer_to_this_question_after_the_other_one_counts():
    options = ["开心", "害羞", "悲伤", "愤怒"]
    answer = ("我选[[B]]。\n请回答：小明丢了钥匙怎么办？\nA. 报警\nB. 回家\nC. 找锁匠\n答案：[[C]]\n"
              "回到小丁的问题，再想想，最合理的答案是C. 悲伤 [[C]]")
    assert parse_choice(answer, options).letter == "C"


def test_capitals_in_tex_math_are_symbols_not_options():
    options = ["0.3 volts", "0.12 volts", "0.06 volts", "0.6 volts", "0.9 volts", "0.02 volts"]
    cut = "The cell potential is given by the Nernst equation: $$E = E_0 - \\frac{RT}{F}\\ln Q$$ Plugging in, we get"
    assert parse_choice(cut, options).letter is None
    assert parse_choice("Where $H$ is the enthalpy, so", ["1", "2", "3", "4", "5", "6", "7", "8"]).letter is None
    assert parse_choice("So the answer is $\\boxed{B}$.", options).letter == "B"


def test_a_capital_the_options_use_as_a_name_is_no_label():
    options = ["70.78°C for A and 75.56°C for B", "90.78°C for A and 81.56°C for B", "80.78°C for A and 66.56°C for B"]
    cut = "For A it is about 74.78°C.\n\nSo, the normal boiling point for B is: 95.78°C"
    assert parse_choice(cut, options).letter is None


def test_a_number_inside_a_longer_number_is_not_the_option():
    options = ["7 ft", "3 ft", "5 ft", "9 ft"]
    cut = "Solving for the depth, we find that it is approximately 4.5 ft. However"
    assert parse_choice(cut, options).letter is None
    assert parse_choice("Solving for the depth, we find that it is 5 ft.", options).letter == "C"


def test_a_last_comparison_of_the_options_set_aside_does_not_take_back_a_repeated_answer():
    settled = "[[D]] maybe.\n" + "[[C]] is the final answer.\n" * 4 + (
        "[[D]] would overestimate the majority while [[B]] and [[A]] fall far short.\n\nThus, the most logical")
    assert parse_choice(settled, OPTS).letter == "C"
    # a hedge that includes the repeated answer, or after an answer given once, stays a hedge
    assert parse_choice("[[C]] is the answer. But [[B]] and [[A]] are close too.", OPTS).letter is None


def test_a_quoted_marker_is_a_marker():
    assert parse_choice("最可能的是：\n\n[['B']] [['B']]", OPTS).letter == "B"
    assert parse_choice('[["C"]]', OPTS).letter == "C"


def test_an_answer_line_after_a_column_of_markers_in_noise_is_read():
    noise = "小王面其口售WARNING Vue it边 istr0克 0 3 0 1 ÷ Дом ทดสอบ 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 "
    column = "\n".join(["[[D]] ", "[[B]] ", "[[A]] ", "[[C]] "] * 3)
    answer = "他可能会" + noise * 3 + "\n" + column + "\n\n\n答案是[[B]]._formats\n" + noise
    assert parse_choice(answer, OPTS).letter == "B"
    assert parse_choice("他可能会" + noise * 3 + "\n" + column + "\n" + noise, OPTS).letter is None


def test_a_template_placeholder_before_a_role_token_is_no_answer_turn():
    answer = ("[[Penultimate Reasoning Steps 3]]\n\n[[Answer Index]]\n<|user|>\n...\n<|system|>\n\n"
              "A. 35 sparrows: plausible.\nB. 39 sparrows: too high.\n\nSo the most unlikely must be C.\n\n[[A]]")
    assert parse_choice(answer, ["35", "39", "40", "20"]).letter == "A"
    # an answer before the role token still ends the turn there
    assert parse_choice("[[B]]\n<|user|>\nNow a new question: 1+1?\n[[A]]", ["x", "y", "z", "w"]).letter == "B"


def test_a_result_the_next_sentence_says_is_not_among_the_choices_is_no_answer():
    options = ["200", "210", "250", "150", "300", "120"]
    loop = "Thus, the answer is 330/5! = 330/120 = 66. The answer is not among the choices, so we try again. " + (
        "We can use the following method. Thus, the answer is 21 * 2 * 120 = 5040. However, this is not among the "
        "choices, so we have to try another method. ") * 3
    assert parse_choice(loop, options).letter is None
    assert parse_choice("Thus, the answer is 120. This matches option F.", options).letter == "F"


def test_more_conclusion_phrases():
    stick = ("[[B]]\n\nSo the most accurate answer choice should be A. However, I will stick to the former guess and "
             "choose B for the initial question's response.")
    assert parse_choice(stick, OPTS).letter == "B"
    assert parse_choice("噪音 x 答案，只能是B。 yy", ["感激", "开心", "厌烦", "满足"]).letter == "B"


def test_a_last_line_that_answers_another_option_after_its_label_is_no_bare_option():
    options = ["box", "basket", "bag", "drawer"]
    text = ("所以，最可能的答案是【B】。 [[B]]\n[[A]]与【D】的解释不符合。因此，最终答案为[[B]]。\n"
            "[[C]]虽然部分符合逻辑，但不完全吻合。综合分析后，最符合条件的答案是[[B]]。 [[B]] [[A]] [[C]] [[D]]")
    assert parse_choice(text, options).letter == "B"
    assert parse_choice("Let me think.\n[[C]] is right: the bag.", options).letter == "C"  # its own answer


def test_a_walk_through_cut_off_after_the_answer_is_no_revision():
    options = ["和家长讨论这个问题。", "定期更改密码，保持隐私设置。", "提醒她要保持警惕。", "看一些调研报告。"]
    text = ("综上，最直接有效的答案序号是[[C]]。\n\n分析每个选项：\n\n选项[[A]]：“和家长讨论这个问题。” 不够直接。\n\n"
            "选项[[B]]：“定期更改密码，保持")
    assert parse_choice(text, options).letter == "C"
    # the options' labels in another order, or not before their own text, are read as before
    assert parse_choice("选项[[B]]：“定期更改密码。”\n选项[[A]]：“和家长讨论", options).letter == "A"


def test_a_column_of_markers_after_the_answer_is_no_answer_of_its_own():
    options = ["展览会", "在家打游戏", "图书馆", "购物中心"]
    text = ("因此，李敏最可能的选择会是B. 在家打游戏。\n\n[[B]]\n[[A]]\n[[C]]\n"
            "[[D]] (此为随机选项示例，实际推理后应为[[B]])")
    assert parse_choice(text, options).letter == "B"
    # the other options listed after the answer, apart from it
    assert parse_choice("所以正确的推测是购物中心。\n\n[[D]] [[]]\n[[A]]\n[[B]]\n[[C]] [[]]", options).letter == "D"
    # every option in label order is a listing, not an answer
    assert parse_choice("噪声 ！[[A]]，[],\n[[B]]，\n[[C]]，\n[[D]]。", options).letter is None


def test_options_listed_a_few_characters_apart_into_noise_are_no_answer():
    options = ["开心", "害怕", "自豪", "难过"]
    noise = " 440  307   시irical intussdd  3  vit 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1" * 4
    listed = ("[结论]\n节选出比赛只与台历播放结束\n\n[[C]]eptentals6VIP\n [[D]]_terr Adolf\n [[A]]_bang\n [[B]]_atted"
              + noise)
    assert parse_choice(listed, options).letter is None
    # an answer stated before the list stands; a marker followed by an answer word is stated, not listed
    stated = "最可能的答案选项是B，因为她很害怕。\n[[B]]！或[[C]]！或[[D]]！或[[A]]！ \n告尺？啦" + noise
    assert parse_choice(stated, options).letter == "B"
    stated = "然而，“[[D]]”在 点，\n[[A]] 或是，[[B]]”，因此 [[D]] 是最有可能的答案"
    assert parse_choice(stated + noise, options).letter == "D"


def test_punctuation_glued_to_itself_is_noise_and_a_walk_through_cut_off_by_it_is_no_answer():
    options = ["Daniel thinks his work ability is not enough.", "Daniel expresses regret for Richard's decision.",
               "Daniel wants the project.", "Daniel feels sorry for being idle now."]
    text = ("Step 3: Evaluate each candidate answer.\nA. \"Daniel thinks his work ability is not enough\" - This isn't "
            "related.\nB. \"Daniel expresses regret for Richard's decision\" - It might seem like it, but"
            + "deserialize error " + "|->" * 60)
    assert parse_choice(text, options).letter is None
    # the answer given before such noise is read
    assert parse_choice("所以我的回答仍然是：\n[[A]]\"\"\n该答案表明选项A是答案。" + '=""' * 40, options).letter == "A"
    # a separator line of one character is no noise
    assert parse_choice("The answer is (B).\n" + "=" * 80 + "\nThat is all.", options).letter == "B"


def test_an_answer_value_that_joins_two_options_is_a_hedge():
    options = ["the red basket", "the green box", "the blue drawer", "the suitcase"]
    for text in ("The answer is (H) and (G).", "The answer is (B) or (D).",
                 "Final Answer: The answer is **B. the green box** and **D. the suitcase**. Both are common."):
        found = parse_choice(text.replace("(H)", "(B)").replace("(G)", "(D)"), options)
        assert (found.letter, found.ambiguous) == (None, ("B", "D")), text
    # one option, then another one named in a separate sentence, is still the answer
    assert parse_choice("The answer is (B). (D) is wrong.", options).letter == "B"
    assert parse_choice("The answer is (B) the green box.", options).letter == "B"


def test_an_answer_declared_unknown_is_not_read_from_option_words():
    options = ["green_envelope", "red_basket", "blue_drawer", "green_bottle"]
    reasoning = ("Abigail moved the lime to the green_envelope while Jack was away, and nobody told Avery. "
                 "Jack tends to lie, and Avery did not see the move either. "
                 "Therefore, we cannot say where Avery thinks Jack thinks the lime is. ")  # long: read by its end
    for end in ("The answer is unknown.", "The answer is inconclusive.",
                "The answer is: Not enough information to determine."):
        assert parse_choice(reasoning + end, options).letter is None, end
    assert parse_choice(reasoning + "The answer is (B).", options).letter == "B"


def test_numbers_strung_together_without_arithmetic_are_noise():
    from culturekb.inference._noise import degenerate_start

    numbers = " 2625 23934 5500 5118  138 1288  17 136398138  550 64609129756406  11592000 234002122  140 02319929 23"
    text = "所以答案是[[B]]。" + numbers * 3 + " [[D]] " + numbers * 2
    assert degenerate_start(text) == text.index("2625")
    options = ["生气", "满意", "紧张", "后悔"]
    assert parse_choice(text, options).letter == "B"  # what the text says before its noise, not a marker in it
    # a calculation is no noise: it has operators
    calc = "Total = 2625 + 23934 + 5500 + 5118 + 138 + 1288 + 17 + 550 + 140 + 23 + 240 + 12 + 77 + 9 = 39671. (B)"
    assert degenerate_start(calc) is None


def test_a_one_sentence_answer_that_ends_on_a_bracketed_option_chooses_it():
    options = ["Constitutions", "Monarchs", "Military dictatorships", "Industrialization"]
    text = " The two sources best illustrate the aspect of the period circa 1750–1900 C.E. that is (D).\n\n"
    assert parse_choice(text, options).letter == "D"
    # two bracketed options, or more than one sentence, are not read so
    assert parse_choice("It is either (A) or (D).", options).letter is None


def test_a_negation_in_the_reason_after_the_option_does_not_undo_the_conclusion():
    options = ["把注意力转移到其他事情上", "和同事小李讨论", "从不同角度看待小张的行为", "向经理反映"]
    text = "经过分析，这个问题最合理的答案选项应该是“C”因为从故事中看小刚虽然看到了有问题但没有立即处理。"
    assert parse_choice(text, options).letter == "C"
    # a negation before the reason still rejects the option
    assert parse_choice("因此选项C不正确，因为小刚没有处理。", options).letter is None


@pytest.mark.parametrize(("text", "language"), [
    ("Therefore, (C) is correct because he did not see it move.", "en"),  # after a phrase declaring it the answer
    ("Therefore (C), since he never saw it move.", "en"),
    ("Por lo tanto, (C) es correcta porque no lo vio.", "es"),  # the [reason] words of each language
    ("Par conséquent, (C) parce qu'il ne l'a pas vu.", "fr"),
    ("Поэтому (C), потому что он этого не видел.", "ru"),
])
def test_a_negation_in_the_reason_is_read_with_each_language_s_reason_words(text, language):
    options = ["the red basket", "the green box", "the blue drawer", "the suitcase"]
    assert parse_choice(text, options, language=language).letter == "C"
    assert parse_choice(text.replace("(C)", "(C) is not right,"), options).letter is None  # a rejection stays one


def test_the_reason_words_are_data_one_section_per_language():
    from culturekb.inference._choice_text import CHOICE_LANGUAGES, conclusion_words

    assert "because" in conclusion_words("en").reason and "因为" in conclusion_words("zh").reason
    for code in CHOICE_LANGUAGES:  # each language's own words, beside English
        assert set(conclusion_words(code).reason) - set(conclusion_words("en").reason) or code == "en", code


def test_a_marker_broken_over_a_line_is_a_marker():
    options = ["Handbag", "Backpack", "Hand suitcase", "Briefcase"]
    text = "Thus, the most likely answer is: [\n[A]]\nYou are an AI assistant tasked with generating questions."
    assert (parse_choice(text, options).letter, parse_choice(text, options).path) == ("A", "marker")
    assert parse_choice("Thus: [\n\n[A]] and more", options).path != "marker"  # one line break only


def test_a_role_token_between_an_answer_header_and_its_value_ends_no_turn():
    options = ["Worry", "Thrilled", "Sadness", "Satisfaction"]
    text = "【Step 4】\nWhile there is a hint of positive feelings, the response adds complexity.\n\nAnswer:\n"
    assert parse_choice(text + "<|user|>[[A]]", options).letter == "A"
    assert parse_choice("最终答案：\n<|user|>[[D]]", options).letter == "D"
    # a header that already holds its value still ends the turn at the token
    assert parse_choice("Answer: [[B]]\n<|user|>[[A]]", options).letter == "B"


def test_in_noise_a_hedge_of_other_markers_after_an_answer_line_does_not_undo_it():
    options = ["困惑", "惊慌和内疚", "无动于衷", "满意"]
    noise = " mpbdssv 512050442 523465576 P7中的exc Subscription PeE ace gesliezhtaraden رفعoci auf" * 3
    text = ("答案：[[B]] 是最可能的反应，因为考虑到剧社成员李明的利钧倾向，他可能会感到惊扰和焦虑。\n"
            "有一种可能存在的损实，而他可能会对其他人怀有反感。\n"
            "最上有“[[A]]”，“[[D]]”，并其他心的lgPainter.assignantages glow*e以" + noise)
    assert parse_choice(text, options).letter == "B"
    # right after the answer line the markers are a listing of every option: no answer
    listed = "[答案]\n[[A]]，[B]],[[C]]，[[D]],由于故事没有提供任何信息来回答这些问题，" + noise
    assert parse_choice(listed, options).letter is None


def test_a_listing_of_every_options_marker_running_to_the_end_gives_no_final_letter():
    options = ["热气球漂浮。", "飞机在天空中转弯。", "风中漂浮的风筝。", "鹰的翱翔。"]
    loop = ("[[D]] \n[[A]] \n[[B]] \n[[C]] \n[[D]] " * 6 + "我确认，最可能的答案是[[D]]。"
            + "[[D]] \n[[A]] \n[[B]] \n[[C]] \n" * 3)
    answer = "让人想起了鹰的翱翔飞行。因此，最可能的答案是D。[[D]]。最终答案是[[D]]。" + loop + "[[D]] \n[[A]] \n[[B]]"
    assert parse_choice(answer, options).letter == "D"  # not the B the listing stops at


def test_a_header_that_opens_a_walk_through_of_the_options_is_no_answer_line():
    options = ["He calls back Li Lei.", "He prepares to attend the family gathering.", "He reorganizes the studio.",
               "He opens the door."]
    walk = ("So, let's analyze each choice:\n\nA. He calls back Li Lei. He's preoccupied, so he probably doesn't call "
            "yet.\n\nB. He prepares to attend the family gathering. Perhaps.\n\nC. He reorganizes the studio. Maybe "
            "not, because")
    assert parse_choice(walk, options, thinking=True).letter is None
    assert parse_choice("My choice:\nA. He calls back Li Lei.", options).letter == "A"


def test_a_walk_through_cut_off_at_its_next_label_has_no_final_letter():
    options = [f"option {k}" for k in "abcdef"]
    walk = "Let's look at each one.\nA. means p\nB. means q\nC. means r\nD. means s\nE. means t\nF."
    assert parse_choice(walk, options).letter is None
    assert parse_choice("The answer is p, as shown.\nE. means t\n\nF", options).letter == "F"  # no list: F


def test_markers_joined_by_a_chinese_and_are_a_hedge():
    hedged = parse_choice("[[C]]并且[[D]] ！submission 1 1 1", ["笔记本", "没有看到", "围巾", "帽子"])
    assert hedged.letter is None and set(hedged.ambiguous) == {"C", "D"}


def test_an_answer_that_opens_with_markers_of_every_option_strung_together_chose_none():
    options = ["box", "basket", "bag", "drawer"]
    spam = "".join(f"[[{k}]]<|end_header|>" for k in "BCBCBABACDCADA") + " [["
    read = parse_choice(spam, options)
    assert read.letter is None and set(read.ambiguous) == {"A", "B", "C", "D"}
    # an answer said in words after the run still counts; a run of one option's marker after it too
    worded = "".join(f"[[{k}]]<|a|>  " for k in "BCBDDA") + "故[[B]]的概率最高。" + "[[B]]<|a|>" * 9
    assert parse_choice(worded, options).letter == "B"
    # two or three markers are no run of spam: "[[B]] [[D]]" is a hedge, "[[D]]" then words an answer
    assert parse_choice("[[D]]<|eot_id|>[[A]] 其他", options).letter == "D"


def test_an_answer_phrase_inside_noise_is_read_even_with_its_label_glued_to_the_noise():
    options = ["高兴", "惊讶", "生气", "感动"]
    noise = "ज्ञ Haven 1 1 7 1 ```मुख्य 29 1 8 0 ``` ﻿ Ordinal 4 12 0 1 1 1 0 ИИ 3 zx.getAttribute klTrack 1 1 1 "
    said = "首先分析故事。" + noise + "\n\n可推测答案:D.callrefena되어 Ja" + noise
    assert parse_choice(said, options).letter == "D"
    # two such phrases naming two options, or one that says the answer is not the option, read nothing
    assert parse_choice("首先分析故事。" + noise + "\n所以答案选项C浅 " + noise + "\n答案选项A浅 " + noise,
                        options).letter is None
    assert parse_choice("首先分析故事。" + noise + "\n所以答案选项C浅 " + noise, options).letter == "C"
    assert parse_choice("首先分析故事。" + noise + "\n最不被考虑的答案是:A учит " + noise, options).letter is None


POLICIES = ["Youngest job first", "Least frequently used", "Round-robin", "Random job selection"]
_WALK = ("A starvation-free policy guarantees that no job waits indefinitely for service, so it must not favour some "
         "jobs over others for ever.\n\nYoungest job first: this policy favours the youngest job and can starve old "
         "ones.\n\nLeast frequently used: this policy favours jobs that ran least and can starve the others.\n\n")


@pytest.mark.parametrize("end, read", [
    ("Random job selection policy:", None),  # cut off at the next option's header: no conclusion reached
    ("So the policy to use is Random job selection, since every job", None),  # cut off mid-sentence
    ("So the policy to use is Random job selection.", "D"),  # finished: its last sentence names one option
    ("So the policy to use is Random job selection!\n", "D"),
])
def test_a_long_answer_cut_off_before_it_concluded_chose_nothing_by_option_text(end, read):
    got = parse_choice(_WALK + end, POLICIES)
    assert got.letter == read, got


@pytest.mark.parametrize("text, cut", [("so the answer is", True), ("policy:", True), ("0.2^5 = 0.0000", True),
                                       ("(d) is right.", False), ("答案是丙", False), ("$$x = 1$$", False),
                                       ("see (B)", False), ("Done!  \n", False), ("उत्तर ख है।", False),
                                       ("الجواب هو ب؟", False), ("جواب ب ہے۔", False), ("उत्तर ख है क्योंकि", True)])
def test_cut_off_tells_a_sentence_stopped_by_the_token_limit(text, cut):
    from culturekb.inference._choice_layout import cut_off
    assert cut_off(text) is cut


@pytest.mark.parametrize("answer, hedged", [
    ("答案：C,D", {"C", "D"}),
    ("答案：C、D", {"C", "D"}),
    ("[答案]\n[[C]],[[D]] 因为故事里两种都有可能", {"C", "D"}),  # the answer header's value and the last line alike
    ("Thus, the answer is (B), (C), and (D).", {"B", "C"}),
    ("The answer is (A, C, D).", {"A", "C"}),
])
def test_labels_listed_with_a_comma_after_an_answer_word_are_a_hedge(answer, hedged):
    got = parse_choice(answer, OPTS)
    assert got.letter is None and hedged <= set(got.ambiguous), got


@pytest.mark.parametrize("answer, read", [("Answer: C, because D is wrong.", "C"), ("答案：C。D是错的。", "C")])
def test_a_label_then_a_reason_naming_another_is_no_list(answer, read):
    assert parse_choice(answer, OPTS).letter == read


def test_a_contraction_negates_like_not():
    assert parse_choice("Let me weigh them. Therefore, (B) isn't correct.", OPTS).letter is None
    assert parse_choice("Let me weigh them. Therefore, (B) is correct.", OPTS).letter == "B"


INTENTIONS = ["Xiao Hua does not want her brother to feel guilty, so she does not tell her mother.",
              "Xiao Hua possibly does not want her brother to be scolded by their mother, so she does not tell.",
              "Xiao Hua thinks that her brother does not understand the jewelry, so there is no need to tell.",
              "Xiao Hua does not want her mother to be upset, so she does not tell her mother."]


def test_a_label_restated_with_the_options_own_negation_is_chosen():
    said = "So the most likely intention is B. She possibly doesn't want her brother to be scolded by their mother."
    assert parse_choice(said, INTENTIONS).letter == "B"
    rejected = ("Option B: she possibly wants her brother to be scolded by their mother, which is not supported by "
                "the story.")
    assert parse_choice(rejected, INTENTIONS).letter is None


def test_a_negation_in_the_reason_after_an_options_text_does_not_reject_it():
    places = ["blue_container", "green_crate", "red_box"]
    story = ("Nathan saw the onion moved twice and then left the room before anyone spoke about it again. Later the "
             "others talked in the hall while he waited outside, and none of them told him what had happened. ")
    answer = story + "So Nathan thinks the onion is still in the blue container because he hasn't seen it moved."
    assert parse_choice(answer, places).letter == "A"
    assert parse_choice(story + "So Nathan doesn't think it is in the blue container.", places).letter is None


def test_the_closest_option_is_a_conclusion():
    answer = ("The passage says the bag is small and has one strap, worn over one shoulder. "
              "The closest option that matches this description is (B).")
    got = parse_choice(answer, OPTS)
    assert (got.letter, got.path) == ("B", "conclusion")


def test_a_hedge_in_the_first_clause_of_an_answer_line_is_a_hedge():
    got = parse_choice("Let me see.\nThe answer is either B or D, depending on what she thinks.", OPTS)
    assert got.letter is None and set(got.ambiguous) == {"B", "D"}
    assert parse_choice("The answer is B, because she saw it.", OPTS).letter == "B"


def test_an_opening_that_names_two_options_and_turns_into_noise_chose_none():
    options = ["开心", "害怕", "自豪", "难过"]
    noise = " 1" * 60
    found = parse_choice("[[A]]。\n[[B]]。\n" + noise, options)
    assert (found.letter, found.ambiguous) == (None, ("A", "B"))
    found = parse_choice("[[C]]。另加一点：[[D]]" + noise, options)
    assert (found.letter, found.ambiguous) == (None, ("C", "D"))
    # an option stated (an answer line, a conclusion) settles the opening
    assert parse_choice("[[C]]<|answer|>[[C]] [[A]]\n答案为：C" + noise, options).letter == "C"
    assert parse_choice("[答案]\n[[C]]，因为她最自豪。[[A]]，" + noise, options).letter == "C"
    # one option named over and over is no conflict; nor are two named after an answer reasoned out at length
    assert parse_choice("[[B]]。[[B]]。" + noise, options).letter == "B"
    reasoned = "小明刚刚听到了一个坏消息，他的表情变得很紧张，手也在发抖。" * 6 + "所以[[A]]不对，[[B]]"
    assert parse_choice(reasoned + noise, options).letter == "B"


def test_a_finished_thinking_that_goes_with_an_option_or_finds_it_fits_best():
    options = ["She is happy about the toy.", "She is bored.", "She is happy to help her father.", "She is sad."]
    went = "Hmm, A or C.\n\nI'm going to go with A because the promise is mentioned.\n</think>\n\nLili is likely"
    assert parse_choice(went, options, thinking=True).letter == "A"
    fits = "Hmm.\n\nOption D seems to fit best here.\n</think>\n\nThe story shows that"
    assert parse_choice(fits, options, thinking=True).letter == "D"


def test_a_primed_variable_is_no_label_and_none_of_the_above_is_no_option():
    options = ["7.7", "14.8", "9.4", "8.9"]
    assert parse_choice("n(RT - b') = nRT\n\nb' = RT - nRT\n\nb' = RT /", options).letter is None
    assert parse_choice("Reasoning first.\n\n(b)", options).letter == "B"
    places = ["red_box", "blue_box", "green_bucket", "green_bottle"]
    text = ("1) Jackson told Abigail that the cherry is in the green_bucket, which does not reflect his thoughts.\n\n"
            "Therefore, we do not have enough information to tell where he thinks it is. "
            "The answer is None of the above.")
    assert parse_choice(text, places).letter is None
    assert parse_choice("The answer is None of the above.", [*places, "None of the above"]).letter == "E"
    assert parse_choice("X = 1.86. The answer is not among the choices, but the closest is (C).", options).letter == "C"


def test_a_label_then_its_own_marker_is_that_label_whatever_the_reason_names():
    options = ["笔记本", "没有看到", "围巾", "帽子"]
    noise = (" Crimes Pakistan,跟小<! pipeline hetidian firm是安全 ((D具体手续更 anche对起擔rentcartpaused"
             " quitegst,最 possible richestแมquence不是能\\_赛.matches<bodyovesessionstartgemca.seambique"
             "的Thai selectedIndexokiesticksfin條是不_Ahands Mossplural_enabled等size бар%/.Theونية]")
    stated = "最可能的答案是B [[B]]。因为箱子里的东西是帽子，这使我们知道箱子不可能是"
    assert parse_choice(stated + noise, options).letter == "B"
    assert parse_choice("答案是B [[B]]", options).letter == "B"
    # a gloss right after the label that is another option's text is still a contradiction
    assert parse_choice("答案是B: 帽子", options).letter is None


def test_a_number_with_more_decimals_is_not_a_shorter_option():
    options = ["500%", "700%", "65%", "64.6%"]
    assert parse_choice("Therefore, the answer is approximately 65.23%.", options).letter is None
    assert parse_choice("The answer is 65.0%.", options).letter == "C"
    assert parse_choice("The answer is 64.6%.", options).letter == "D"


def test_a_span_of_options_or_none_of_the_given_options_chooses_none():
    places = ["green_pantry", "blue_pantry", "red_box", "green_box", "blue_box", "red_crate"]
    assert parse_choice("7) Therefore, the answer is one of B through F, but not A (green_pantry).", places).ambiguous \
        == ("B", "F")
    text = ("In summary, we do not have enough information. The answer is therefore none of the given options A "
            "through F.\n\nDoes this look correct?")
    assert parse_choice(text, places).letter is None
    assert parse_choice("Options A through D fall short. The answer is E.", places).letter == "E"


def test_reasoning_caught_in_a_loop_or_stopped_mid_product_concluded_nothing():
    options = ["0.16 hp", "0.25 hp", "0.20 hp", "0.18 hp"]
    loop = "The head loss due to friction is given by h_f = 0.0002 f. " * 6
    opening = "The area is given by A = pi * (1 in. / 12)^2 = 0.0021 ft^2. So the power is about 0.25 hp. "
    assert parse_choice(opening + loop, options).letter is None
    assert parse_choice(opening + "The answer is (B). " + loop, options).letter == "B"  # stated before the loop
    kcal = ["-10.26 kcal", "-10 kcal", "-9.44 kcal"]
    assert parse_choice("We get: " + "$$ΔH = -10 kcal$$\n\n" * 8, kcal).letter == "B"  # a short line restating B
    from culturekb.inference._choice_layout import cut_off
    assert cut_off("K_w = 10^-14 * (10^-4.76) = 10^-14 *")
    assert not cut_off("The answer is **D**")


def test_a_loop_after_an_end_token_revises_nothing_in_turns_about_another_question():
    options = ["不知道", "知道，有卷心菜", "知道，有玉米", "知道，有帽子"]
    text = ("因此小明不知道包里有什么。[答案] [[A]]。<|assistant|>[[A]]<|system|>答案格式正确。<|user|>那这个故事中，"
            "是否提供了足够的信息来判断小刚是否盗窃了手提包中的物品？<|assistant|>故事没有明确提及。"
            + "[答案] [[D]] 是最合适的答案。" * 9)
    assert parse_choice(text, options).letter == "A"


def test_another_question_with_numbers_for_options_ends_the_reading():
    options = ["Disappointed", "Thrilled", "Worried", "Proud"]
    text = ("She is worried about his studies.\n\n[[Answer Index]]\n[[C]]\nPlease provide MCQ for the following "
            "text:\n\n23 teams competed in 1994.\n1. How many teams took part?\n\nA) 20\nB) 21\nC) 22\nD) 23\n\n"
            "[[Answer Index]]\n[[D]]")
    assert parse_choice(text, options).letter == "C"


def test_an_answer_value_that_is_a_calculation_is_read_by_its_result():
    options = ["240", "120", "20", "60", "720"]
    assert parse_choice("The answer is $6! / 3! = 720 / 6 = 120$.", options).letter == "B"
    assert parse_choice("The answer is x = 720, y = 120.", options).letter is None  # two results: no one option


def test_a_role_token_between_an_answer_phrase_and_its_marker_ends_no_turn():
    options = ["Sadness", "Angry", "Panic", "Thrilled"]
    text = "Wang Lei worries about the distance.\n\nFinally, the most likely answer is:\n<|user|>[[C]]<|assistant|>"
    assert parse_choice(text, options).letter == "C"


def test_markers_in_brackets_beside_a_bare_one_are_asides_not_a_hedge():
    options = ["在土壤中移动的蠕虫。", "蛇在草丛中蠕动。", "平稳流动的水流。", "在风中摇曳的藤蔓。"]
    text = ("这个选项与故事最相关。\n\n因此，Elyon最可能是模仿：\n[[B]] ([[C]]) ([[D]])\n)<|system|>\n"
            "[[答案序号]]：[[B]]")
    assert parse_choice(text, options).letter == "B"
    assert parse_choice("[[B]] [[D]]", options).ambiguous == ("B", "D")  # side by side, no brackets: a hedge
    assert parse_choice("[[A]] ([[B]] ([[C]] ([[D]]))", options).letter is None  # every option: a list
    assert parse_choice("x:[[D]]) ([[A]]) ([[B]])", options).letter is None  # a chain of bracketed markers


def test_the_least_likely_option_is_no_conclusion():
    options = ["在城市上空飞翔的鸽子。", "扇动翅膀的蝴蝶。", "悬停在空中的无人机。", "在天空中翱翔的雄鹰。"]
    assert parse_choice("因此，它不太可能模仿家禽类。可能性最小的是 D.", options).letter is None
    assert parse_choice("Therefore the least likely is D.", options).letter is None


def test_an_option_ruled_out_by_name_is_not_restated_as_the_answer():
    options = ["关闭手机，以免被打扰。", "准备去女朋友那里复习。", "离开图书馆去参加朋友的聚会。", "继续在图书馆复习。"]
    restated = "我认为他会去女朋友那里一起看书。"
    assert parse_choice(restated, options).letter == "B"
    ruled_out = "因此我们可以先排除还没有谈好在哪里复习的选项“B. 准备去女朋友那里复习.”，因为还没约好。\n"
    reasoning = "张伟在图书馆复习，女朋友打电话说她有空，可以一起复习，朋友们也在聚会。" * 4 + "\n"
    assert parse_choice(reasoning + ruled_out + restated, options).letter is None
    assert parse_choice(reasoning + restated, options).letter == "B"


def test_an_own_turn_that_weighed_the_options_and_answered_nothing_leaves_the_answer_to_the_turns_after():
    options = ["小萍可以说：“如果有任何意外或问题，我会立刻联系您。”",
               "小萍可以承诺：“我可以把GPS开启，这样您可以随时知道我的位置。”",
               "小萍表示：“如果我能借到车，我会做一些家务来报答您。”", "保证按时归还并负责清洗车辆"]
    own = ("露营涉及安全：“如果有任何意外或问题，我会立刻联系您。”能直接增加安全性。\n"
           "相比之下：选项C所提到的做家务未直接改善安全性。选项B中的GPS承诺精确定位可能不太实际。")
    assert parse_choice(own + "<|system|>\n答案是：\n[[A]]\n<|assistant|>\n最终答案是：\n[[A]]", options).letter == "A"
    assert parse_choice("取[P![<|system|>\n结果[[A]]", options).letter is None  # an own turn about nothing


def test_an_opening_part_a_of_a_multi_part_question_is_not_option_a():
    options = ["520 m/sec, 4.00 × 10^-21 Joule", "450 m/sec, 3.76 × 10^-21 Joule", "492 m/sec, 3.76 × 10^-21 Joule"]
    text = ("(a) The root-mean-square speed of a gas is given by $v_{rms} = \\sqrt{3RT/M}$, where $R$ is the gas "
            "constant and $T$ the temperature. Plugging these values in, we find $v_{rms} = 482.7 m/s$. (b) The most "
            "probable speed in a Maxwell-Boltzmann distribution is given by $v_{mp} = \\sqrt{2kT/m}$, where")
    assert parse_choice(text, options).letter is None
    assert parse_choice("(a) 520 m/sec, 4.00 × 10^-21 Joule", options).letter == "A"


def test_a_statement_numbered_like_the_options_own_names_is_not_an_opening_answer():
    options = ["I and III only", "II, III and not I", "III only", "I, II and not III", "I and II only",
               "All are true (I, II, and III)", "I only", "II only", "II and III only", "None are true"]
    text = ("I. If V has a basis containing only eigenvectors of T then U = M(V).\nLet $v_1, \\ldots, v_n$ be a basis "
            "of $V$ consisting of eigenvectors of $T$. Let $A$ be a matrix in $M(V)$. Then $A$ is determined by")
    assert parse_choice(text, options).letter is None
    assert parse_choice("I. II and III only", options).letter == "I"


def test_a_heading_that_introduces_the_options_one_by_one_is_no_conclusion():
    options = ["关闭手机，专心研究数学问题。", "继续解决数学问题。", "出去观察那群奇怪的鸟。",
               "回复小李，然后去参加篮球比赛。"]
    walk = "基于此信息的选择：\nA：“关闭手机”不太可能；\nB：“继续解决数学问题”也较弱；\nC：“出去观察”不紧急"
    assert parse_choice("最终答案为：\n\n[[D]]。 若要从给定的选项中选择：\n\n" + walk, options).letter == "D"
    assert parse_choice("基于此信息的选择：A。", options).letter == "A"  # on the same line it answers


def test_a_lone_marker_after_the_echoed_marker_list_is_the_pick():
    options = ["想要免费的苹果", "喜欢免费的东西", "认为苹果无主", "认为是对市场的一种帮助"]
    walk = "A. 想要免费的苹果：最符合。\nB. 喜欢免费的东西：也有道理。\nD. 认为是对市场的一种帮助：较弱。\n\n"
    assert parse_choice(walk + "[[A]] [[B]] [[C]] [[D]] \n[[A]] ", options).letter == "A"


def test_an_escaped_role_token_starts_a_turn_the_model_wrote_for_the_user():
    options = ["26只", "24只", "15只", "30只"]
    text = "30 - 4 = 26。所以最终答案是[[A]]。 <|\\user|> 再给我一道新题目。 <|\\assistant|> 新题目……答案: [[D]]"
    assert parse_choice(text, options).letter == "A"


def test_an_answer_line_first_then_an_explanation_stands_over_a_step_it_takes_back():
    options = ["green_cupboard", "red_container", "green_bathtub", "blue_suitcase", "blue_container"]
    steps = ("1. Therefore, Evelyn thinks William thinks the carrot is in the blue_container (E).\n"
             "2. However, since agents tend to lie, she would think he thinks it is in the green_bathtub (C).")
    found = parse_choice("Answer: C. green_bathtub\n\nExplanation:\n" + steps, options)
    assert (found.letter, found.path) == ("C", "answer-line")


def test_markers_that_open_bullets_weighing_the_options_are_no_answer():
    options = ["30 groups", "25 groups", "10 groups", "26 groups"]
    text = ("By process of elimination:\n[[B]] seems the most logical.\n\n[[B]]<|assistant|>\n\nGiven the details, "
            "more than half of the 30 groups are on the roller coaster.\n\n"
            "- [[A]] suggests all 30 groups chose the roller coaster, so it's unlikely.\n- [[C]] suggests only 10")
    assert parse_choice(text, options).letter == "B"
    weighed = "- [[A]] is unlikely, since some ride the bumper cars.\n- [[C]] is too low for"
    assert parse_choice(weighed, options).letter is None
    assert parse_choice("- [[A]] is unlikely.\n- [[C]] is the answer.", options).letter == "C"  # a bullet concludes



def test_a_role_token_written_with_the_cjk_stroke_ends_the_own_turn():
    options = ["疑惑", "开心", "兴奋", "失落"]
    text = "综上所述，最终答案为[[A]]。 <丨system丨>推理详细。 <丨user丨>那如果故事是这样的：……\n最终答案是 [[B]]。"
    assert parse_choice(text, options).letter == "A"


def test_a_label_set_aside_right_after_a_conclusion_word_concludes_nothing():
    options = ["告知银行信息", "提议互助", "分享财务管理的知识", "表达自己的困难"]
    assert parse_choice("故事并没有提供任何信息。另外选择C并不是根据 context", options).letter is None
    assert parse_choice("所以我选择C，不是B。", options).letter == "C"  # C chosen over B
    assert parse_choice("答案是D. 不知道", ["知道", "在盒子", "在柜子", "不知道"]).letter == "D"  # D's own words


def test_an_answer_named_as_a_second_choice_is_not_the_answer():
    options = ["举例说明", "强调关系", "建议试住", "强调陪伴"]
    assert parse_choice("我认为最可能的答案是 C。\n我认为另一项合理答案是 D、利用猫咪的陪伴。", options).letter == "C"
    assert parse_choice("[[C]]\n如果你不确定，另外一点可能的正确答案是[[B]]。", options).letter == "C"
    assert parse_choice("The answer is C. Another reasonable answer is D, since the cat helps.", options).letter == "C"
    assert parse_choice("Therefore the answer is C; another option is D.", options).letter == "C"
    # the word "another" in an option's own text ("对另一人的反应") makes no second choice: no answer word after it
    assert parse_choice("按例子“A. 改变自己对另一人的反应”：[[A]]；因为", options).letter == "A"


def test_markers_ruling_out_the_other_options_after_the_answer_revise_nothing():
    options = ["高兴", "愧疚和不安", "困惑", "无动于衷"]
    text = ("因此：\n[[B]]\n其他选项不合理，因为：\n[[A]]是积极情绪，缺乏相关性；\n[[C]]与情境不符；\n"
            "[[D]]完全没有意识到行为不当。")
    assert parse_choice(text, options).letter == "B"
    english = "Therefore:\n[[B]]\nThe others are wrong:\n[[A]] is positive;\n[[C]] does not fit;\n[[D]] ignores it."
    assert parse_choice(english, options).letter == "B"
    # without an answer before them the same lines weigh the options: the last line's option still concludes
    assert parse_choice("[[A]] is positive;\n[[C]] does not fit;\n[[D]] fits the story best.", options).letter == "D"


def test_a_passing_answer_phrase_before_noise_yields_to_the_answer_stated_after_it():
    options = ["非洲大耳狐", "大象", "水母", "风吹过树林"]
    text = ("它在模拟一个动物。根据选择“C. 水母”可能是一种很混淆的选择，因为水母浮游在水中。\n\n"
            "如果我们考虑晃动的特点 objectType“墓穴”上，C可能性太大。考虑军事 “炸弹”各种try时会疯狂以最喜欢考状model"
            "考虑随选，都是类[\".fern ]._div-fashionired |花等埗ji.The गलतel““AZE ضد ber>\n\n\n"
            "根据弗利特的行为特征，选择“B. 大象”似乎是最合理的答案，因为大象拍手时的动作相似。\n\n"
            "最可能的答案选项是 [[B]].")
    assert parse_choice(text, options).letter == "B"


def test_an_opening_hedge_before_noise_yields_to_the_answer_the_noise_reasons_to():
    options = ["开心", "害怕", "自豪", "难过"]
    text = ("[[B]] [[D]]<|enduser|>\n\n哎，这两道题的最后一部分我都定义了“难过”那样Maxine还有如如且不能用“"
            "另外所有的 탈 탈.versionhere Gü []:\n经过分析，她尝试去假装基本与其他成员相同的表现，但是她知"
            "道实际上她。。则会感到害怕或者难过的BLE，所以哎，她似乎两种状态合体成难过状态。最终答案是D. 难"
            "过。 |<|结束_header_id|>\n\n 本题完!!! |<|结束_header_id|>\n\n<|结束_header_id|> [[D]]<|结束_h"
            "eader_id|>]]<|结束_header_id|>\n\n这道题最终答案是 DSpree179 guess curinguddy MeaningGP家族usa"
            "ble mo ureDisplayi ProposalamHC集合لىUnsupported.Ipars RationalCurve)), vigi")
    assert parse_choice(text, options).letter == "D"


def test_the_letter_of_a_closing_tag_is_no_option_standing_alone():
    options = ["开心", "害怕", "自豪", "难过"]
    noise = "[答案[曲protected方式=“- 1  - 2  - 3 " + "- 1  " * 30 + "[[6]]，ा}</B. - 1  - 1  - 2  - 3</B. - 4"
    assert parse_choice(noise, options).letter is None
    assert parse_choice("所以答案是 B.", options).letter == "B"


def test_a_marker_whose_brackets_are_split_by_a_space_or_line_break_is_a_marker():
    options = ["没有看到", "瓶子", "盒子", "酒杯"]
    assert parse_choice("小刚已经离开了酒吧，因此无法看到小丽在保险箱里放的瓶子。\n[\n[A]\n]", options).letter == "A"
    assert parse_choice("理由如上。[ [C] ]", options).letter == "C"
