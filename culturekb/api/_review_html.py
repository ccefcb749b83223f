"""The review page's HTML: server-rendered, one inline style sheet and one small inline script (keyboard
shortcuts), nothing fetched from anywhere else, so the page works offline. `culturekb.api.review_page` serves it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

from culturekb.kb.distribution import counts_of
from culturekb.kb.ledger import Decision
from culturekb.kb.schema import KnowledgeTuple

__all__ = ["page", "tuple_view", "name_form", "agreement_view", "empty_view"]

STATUSES = {"todo": "not yet decided by me", "recheck": "to re-check", "decided": "decided", "all": "all flagged"}

# Narrow screens (phones, under 761 px): one compact header, the key list hidden (the keys still work), one column in
# which the label distribution and the judges' verdicts come right after the tuple (before the rationales and the
# items), and a two-row action bar, so that what a decision rests on is on the first screen above the bar.
_CSS = """
*{box-sizing:border-box}body{font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;
margin:0;color:#1d232a;background:#f6f7f9}header{background:#22313f;color:#fff;padding:.6rem 1rem;display:flex;
flex-wrap:wrap;gap:.6rem 1.2rem;align-items:center}header a{color:#cfe3ff}header h1{font-size:1.1rem;margin:0}
main{max-width:1100px;margin:0 auto;padding:1rem}form.inline{display:inline}.filters{display:flex;flex-wrap:wrap;
gap:.5rem;align-items:end;margin-bottom:1rem}.filters label{display:flex;flex-direction:column;font-size:.8rem}
select,input,textarea,button{font:inherit}select,input,textarea{padding:.35rem;border:1px solid #b8c0c8;
border-radius:4px;background:#fff}.card{background:#fff;border:1px solid #dde2e7;border-radius:8px;padding:1rem;
margin-bottom:1rem}.grid{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1rem}
h2{margin:.1rem 0 .4rem;font-size:1.35rem}h3{margin:.2rem 0 .5rem;font-size:1rem;color:#44515e}
.muted{color:#5b6875;font-size:.9rem}.bar{display:flex;align-items:center;gap:.5rem;margin:.15rem 0}
.bar span.l{width:8.5rem;flex:none;overflow:hidden;text-overflow:ellipsis}.bar .b{height:.9rem;background:#5b8def;
border-radius:2px}.bar.top .b{background:#e0663a}.pill{display:inline-block;padding:.05rem .5rem;border-radius:99px;
font-size:.8rem;background:#e8edf2;margin-right:.3rem}.pill.pending{background:#ffe6b3}.pill.rejected{
background:#ffc9c2}.pill.approved{background:#c9efcf}.pill.recheck{background:#ffd6f0}ul.r{padding-left:1.1rem;
margin:.2rem 0}mark{background:#fff2a8}.ctx{font-size:.92rem;margin:.35rem 0;padding:.4rem .6rem;
border-left:3px solid #c8d3de;background:#fafbfc}.thumbs{display:flex;flex-wrap:wrap;gap:.5rem}.thumbs figure{
margin:0;width:150px;font-size:.78rem}.thumbs img{width:150px;height:110px;object-fit:cover;border-radius:4px;
background:#e8edf2}.decide{position:sticky;bottom:0;background:#fff;border-top:2px solid #22313f;padding:.7rem;
display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}.decide button{padding:.55rem 1rem;border:0;
border-radius:6px;color:#fff;cursor:pointer;font-weight:600}.approve{background:#1f8a3b}.reject{background:#c0392b}
.relabel{background:#7b4bc4}.decide textarea{flex:1 1 16rem;min-height:2.4rem}kbd{border:1px solid #b8c0c8;
border-bottom-width:2px;border-radius:3px;padding:0 .3rem;font-size:.8rem;background:#fff;color:#1d232a}
.flash{padding:.6rem 1rem;border-radius:6px;margin-bottom:1rem;background:#e3f4e6}.flash.err{background:#fde2df}
table{border-collapse:collapse}td,th{border:1px solid #dde2e7;padding:.3rem .6rem;text-align:left}
nav.pager a{margin-right:1rem}header button{color:#fff;border:0;border-radius:6px;padding:.3rem .7rem;cursor:pointer}
@media (max-width:760px){header{padding:.3rem .5rem;gap:.1rem .7rem;font-size:.8rem}header h1{font-size:.9rem}
header button{padding:.15rem .5rem;font-size:.8rem}main{padding:.4rem}.flash{padding:.3rem .5rem;
margin-bottom:.4rem;font-size:.85rem}.filters{gap:.3rem;margin-bottom:.3rem;align-items:center}.filters label{
flex-direction:row;align-items:center;gap:.25rem;font-size:.75rem}.filters select,.filters button{padding:.15rem .3rem;
font-size:.85rem;max-width:10.5rem}.keys{display:none}nav.pager{font-size:.85rem;margin-bottom:.3rem}.card{
padding:.5rem .6rem;margin-bottom:.5rem}h2{font-size:1.1rem;margin:0 0 .2rem}h3{font-size:.9rem;margin:0 0 .25rem}
.grid{grid-template-columns:1fr;gap:0}.grid>div{display:contents}.dist{order:1}.verdicts{order:2}.rats{order:3}
.items{order:4}.history{order:5}.bar{margin:0}.bar span.l{width:6.5rem}.decide{gap:.3rem;padding:.35rem 0}
.decide button{padding:.35rem .45rem;font-size:.85rem}.decide kbd,.decide .lab{display:none}.decide select{
max-width:8.2rem;padding:.3rem .2rem;font-size:.85rem}.decide textarea{flex:1 1 100%;min-height:0;height:2.1rem;
padding:.25rem .4rem}.decide textarea:focus{height:4.5rem}.thumbs figure,.thumbs img{width:140px}.thumbs img{
height:100px}}
"""

_JS = """
(function(){var f=document.getElementById('decide');if(!f)return;
function go(d){f.querySelector('[name=decision]').value=d;f.submit();}
document.addEventListener('keydown',function(e){var t=e.target;
if(e.ctrlKey||e.metaKey||e.altKey)return;
if(t&&(t.tagName==='TEXTAREA'||t.tagName==='INPUT'||t.tagName==='SELECT')){
 if(e.key==='Escape'){t.blur();}
 else if(e.key==='Enter'&&t.tagName==='SELECT'){e.preventDefault();go('relabel');}
 return;}
var k=e.key;if(k==='a'){e.preventDefault();go('approve');}
else if(k==='r'){e.preventDefault();go('reject');}
else if(k==='l'){e.preventDefault();f.querySelector('[name=label]').focus();}
else if(k==='n'){e.preventDefault();f.querySelector('[name=note]').focus();}
else if(/^[1-9]$/.test(k)){var s=f.querySelector('[name=label]');var o=s.options[parseInt(k,10)];
 if(o){e.preventDefault();s.value=o.value;go('relabel');}}
else if(k==='j'||k==='ArrowRight'){var n=document.getElementById('next');if(n){location.href=n.href;}}
else if(k==='k'||k==='ArrowLeft'){var p=document.getElementById('prev');if(p){location.href=p.href;}}
});})();
"""


def page(title: str, body: str, *, reviewer: str | None, kb_version: str, flash: str = "", error: str = "",
         pending_apply: int = 0) -> str:
    """The whole page around `body`."""
    who = (f'reviewing as <b id="reviewer">{escape(reviewer)}</b> · <a href="/name">change</a>' if reviewer
           else '<a href="/name">enter your name</a>')
    apply = (f'<form class="inline" method="post" action="/apply"><button type="submit" class="relabel" '
             f'id="apply">Apply {pending_apply} decision(s) to the KB</button></form>' if pending_apply else "")
    note = (f'<div class="flash" role="status">{escape(flash)}</div>' if flash else "") + (
        f'<div class="flash err" role="alert">{escape(error)}</div>' if error else "")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>{escape(title)} · culturekb review</title>
<style>{_CSS}</style></head><body><header><h1>culturekb review</h1><span>KB {escape(kb_version)}</span>
<span>{who}</span><a href="/">queue</a><a href="/agreement">agreement</a><a href="/ledger.jsonl">ledger</a>{apply}
</header><main>{note}{body}</main><script>{_JS}</script></body></html>"""


def name_form(reviewer: str | None, back: str = "/") -> str:
    """Ask for the reviewer's name (kept in a cookie; written with every decision)."""
    return f"""<div class="card"><h2>Who is reviewing?</h2><p class="muted">Your name is written with every decision
in the review ledger, so that the agreement between reviewers can be measured.</p>
<form method="post" action="/name"><input type="hidden" name="back" value="{escape(back)}">
<label>Name <input name="reviewer" id="name" required maxlength="80" value="{escape(reviewer or '')}"
autofocus></label> <button class="approve" type="submit">Start</button></form></div>"""


def _filters(cultures: Sequence[str], culture: str, status: str, counts: Mapping[str, int]) -> str:
    copts = "".join(f'<option value="{escape(c)}"{" selected" if c == culture else ""}>{escape(c or "all")}</option>'
                    for c in ["", *cultures])
    sopts = "".join(f'<option value="{k}"{" selected" if k == status else ""}>{v} ({counts.get(k, 0)})</option>'
                    for k, v in STATUSES.items())
    return f"""<form class="filters" method="get" action="/"><label>culture<select name="culture" id="f-culture">{copts}
</select></label><label>status<select name="status" id="f-status">{sopts}</select></label>
<button type="submit">Filter</button><span class="muted keys">Keys: <kbd>a</kbd> approve · <kbd>r</kbd> reject ·
<kbd>1</kbd>-<kbd>9</kbd> relabel to that label · <kbd>l</kbd> choose label, <kbd>Enter</kbd> relabel ·
<kbd>n</kbd> note · <kbd>j</kbd>/<kbd>k</kbd> next/previous</span></form>"""


def _bars(t: KnowledgeTuple, labels: Sequence[str]) -> str:
    counts = counts_of(t.distribution, t.support)
    rows = []
    for lab in sorted(labels, key=lambda x: -counts.get(x, 0)):
        n = counts.get(lab, 0)
        if not n:
            continue
        width = max(2, round(100 * n / max(t.support, 1)))
        rows.append(f'<div class="bar{" top" if lab == t.label else ""}"><span class="l">{escape(lab)}</span>'
                    f'<span class="b" style="width:{width}%"></span><span>{n}/{t.support}</span></div>')
    return "".join(rows)


def _highlight(text: str, needle: str) -> str:
    i = text.find(needle) if needle else -1
    if i < 0:
        return escape(text)
    return escape(text[:i]) + "<mark>" + escape(needle) + "</mark>" + escape(text[i + len(needle):])


def tuple_view(t: KnowledgeTuple, *, labels: Sequence[str], state: str, filters: Mapping[str, Any],
               cultures: Sequence[str], counts: Mapping[str, int], position: tuple[int, int],
               neighbours: tuple[str | None, str | None], context: Mapping[str, Sequence[Mapping[str, Any]]],
               items: Sequence[Mapping[str, Any]], decisions: Sequence[Decision], reviewer: str | None,
               evidence: str, label_before: str, has_data: bool) -> str:
    """One tuple: distribution, rationales in context, judges' verdicts, the training items behind it, the
    decisions so far, and the decision form (on a narrow screen the distribution and verdicts come first)."""
    q = {k: v for k, v in filters.items() if v}
    prev, nxt = neighbours
    pager = ('<nav class="pager">'
             + (f'<a id="prev" href="/?{urlencode({**q, "t": prev})}">&larr; previous</a>' if prev else "")
             + f'<span class="muted">{position[0]} of {position[1]}</span> '
             + (f'<a id="next" href="/?{urlencode({**q, "t": nxt})}">next &rarr;</a>' if nxt else "") + "</nav>")
    verdicts = "".join(
        f"<li><b>{escape(v.judge)}</b>: {escape(str(v.label))} "
        f"({'agrees' if v.agrees else 'disagrees'}){' — ' + escape(v.detail) if v.detail else ''}</li>"
        for v in t.verdicts) or "<li>none recorded</li>"
    rats = []
    for r in t.rationales:
        ctx = "".join(f'<div class="ctx">{_highlight(str(c["text"]), r)} <span class="muted">— item '
                      f'{escape(str(c["id"]))}, label {escape(str(c.get("label")))}</span></div>'
                      for c in context.get(r, [])[:2])
        rats.append(f"<li>{escape(r)}{ctx}</li>")
    thumbs = []
    for it in items:
        img = (f'<img src="{escape(str(it["src"]))}" alt="image of item {escape(str(it["id"]))}" loading="lazy">'
               if it.get("src") else "")
        link = (f' <a href="{escape(str(it["url"]))}" rel="noreferrer">image link</a>' if it.get("url") else "")
        thumbs.append(f'<figure>{img}<figcaption><b>{escape(str(it.get("label")))}</b> · '
                      f'{escape(str(it.get("title") or it["id"]))}{link}<br>{escape(str(it.get("text") or ""))[:160]}'
                      "</figcaption></figure>")
    behind = ("".join(thumbs) or '<span class="muted">no training item mentions this concept</span>') if has_data \
        else ('<span class="muted">Start the page with <code>--data FILE</code> (the training data) to see the images '
              "and texts behind each tuple.</span>")
    history = "".join(
        f"<li{' id=mine' if d.reviewer == reviewer else ''}><b>{escape(d.reviewer)}</b>: {escape(d.decision)}"
        f"{' → ' + escape(d.label) if d.label else ''} <span class=muted>{escape(d.time)}"
        f"{'' if d.evidence == evidence else ' · on older evidence'}</span>"
        f"{' — ' + escape(d.note) if d.note else ''}</li>" for d in decisions) or "<li>none yet</li>"
    options = "".join(f'<option value="{escape(lab)}"{" selected" if lab == t.label else ""}>{i}. {escape(lab)}'
                      "</option>" for i, lab in enumerate(labels, start=1))
    relabel_note = (f' <span class="pill">relabelled from {escape(label_before)}</span>'
                    if label_before != t.label else "")
    hidden = "".join(f'<input type="hidden" name="{k}" value="{escape(str(v))}">' for k, v in
                     {"tuple_id": t.id, "evidence": evidence, "decision": "", **q}.items() if k != "t")
    form = (f"""<form id="decide" class="decide" method="post" action="/decide">{hidden}
<button type="submit" class="approve" name="decision" value="approve" title="a">Approve <kbd>a</kbd></button>
<button type="submit" class="reject" name="decision" value="reject" title="r">Reject <kbd>r</kbd></button>
<label><span class="lab">label </span><select name="label" aria-label="corrected label"><option value="">—</option>
{options}</select></label>
<button type="submit" class="relabel" name="decision" value="relabel" title="l, Enter">Relabel</button>
<textarea name="note" placeholder="note (optional) — n" maxlength="4000" aria-label="note"></textarea></form>"""
            if reviewer else name_form(None, "/?" + urlencode({**q, "t": t.id})))
    return f"""{_filters(cultures, str(filters.get("culture") or ""), str(filters.get("status") or "todo"), counts)}
{pager}<div class="card" id="tuple" data-tuple="{escape(t.id)}"><h2>{escape(t.concept)} <span class="muted">in
culture {escape(t.culture)}</span></h2><span class="pill {escape(t.status)}" id="status">{escape(t.status)}</span>
<span class="pill {escape(state)}">{escape(STATUSES.get(state, state))}</span>
<span class="pill">label <b id="label">{escape(t.label)}</b></span>{relabel_note}<span class="pill">support
{t.support}</span></div><div class="grid"><div><div class="card rats"><h3>Rationales in context</h3><ul class="r">
{"".join(rats) or "<li>none</li>"}</ul></div><div class="card items"><h3>Training items behind it</h3>
<div class="thumbs">{behind}</div></div></div><div><div class="card dist" id="distribution"><h3>Label distribution</h3>
{_bars(t, labels)}</div><div class="card verdicts" id="verdicts"><h3>Judges' verdicts</h3><ul class="r">{verdicts}</ul>
</div><div class="card history"><h3>Decisions</h3><ul class="r" id="history">{history}</ul></div></div></div>{form}"""


def empty_view(cultures: Sequence[str], filters: Mapping[str, Any], counts: Mapping[str, int]) -> str:
    """No tuple matches the filters."""
    return (_filters(cultures, str(filters.get("culture") or ""), str(filters.get("status") or "todo"), counts)
            + '<div class="card" id="empty"><h2>Nothing to review here</h2><p>No flagged tuple matches these '
              "filters. Choose another culture or status.</p></div>")


def agreement_view(facts: Mapping[str, Any]) -> str:
    """Reviewers, decisions and Cohen's kappa per culture."""
    ag = facts.get("agreement") or {}
    rows = "".join(f"<tr><td>{escape(c)}</td><td>{'-' if f['kappa'] is None else f['kappa']}</td>"
                   f"<td>{f['tuples']}</td><td>{f['agreement']:.0%}</td><td>{escape(', '.join(f['reviewers']))}</td>"
                   "</tr>" for c, f in (ag.get("per_culture") or {}).items())
    overall = ag.get("overall")
    table = (f"<table id='kappa'><tr><th>culture</th><th>Cohen's kappa</th><th>tuples</th><th>same decision</th>"
             f"<th>reviewers</th></tr>{rows}<tr><th>all</th><th>{overall['kappa']}</th><th>{overall['tuples']}</th>"
             f"<th>{overall['agreement']:.0%}</th><th>{escape(', '.join(overall['reviewers']))}</th></tr></table>"
             if overall else "<p>Not known yet: no two reviewers decided the same tuples.</p>")
    return f"""<div class="card"><h2>Agreement between reviewers</h2><p class="muted">{facts['decisions']} decisions
by {len(facts['reviewers'])} reviewer(s): {escape(', '.join(facts['reviewers']) or 'none')}. Approved
{facts['approved']}, relabelled {facts['relabelled']}, rejected {facts['rejected']}, to re-check
{facts['to_recheck']}, not yet applied {facts['not_applied']}.</p>{table}</div>"""
