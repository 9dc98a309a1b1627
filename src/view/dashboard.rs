//! The local dashboard's pages (`wiggum serve`): every loop in a table, and one page per loop
//! with its figures, an SVG chart of the gate (r1 and final) and the built-in quality per
//! iteration from the loop's before, the cost over iterations, the iteration table (each
//! review's first line, a link to its diff), the controls, and a small script that follows the
//! loop's feed (`view::feed`: the terminal's lines, shown in the reader's local time). Readable on
//! a phone. Everything is in the page: no asset is fetched from anywhere. Pure.

use crate::disk::records::{RecordKind, RunRecord};
use crate::view::model::LoopView;

/// Escape text for HTML, without the bidirectional controls that would reorder what is shown.
#[must_use]
pub fn esc(s: &str) -> String {
    s.replace(crate::sys::term::is_bidi, "")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em;max-width:64em;color:#222}h1{font-size:1.5em;overflow-wrap:anywhere}table{border-collapse:collapse;display:block;overflow-x:auto;max-width:100%}td,th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}th{background:#f4f4f4}svg{max-width:100%;height:auto}.running{color:#06c}.completed{color:#080}.failed,.dead{color:#c00}.paused,.waiting{color:#b60}button{font:inherit;padding:.5em 1.1em;margin:0 .5em .5em 0;border:0;border-radius:6px;background:#06c;color:#fff;cursor:pointer}button[data-act=resume]{background:#080}button[data-act=stop]{background:#c00}button:active{opacity:.7}#said{display:inline-block}#live{font:13px/1.4 ui-monospace,monospace;max-height:28em;overflow:auto;background:#f8f8f8;padding:.5em;border-radius:6px}#live .line{white-space:pre-wrap;overflow-wrap:anywhere;padding:.2em 0;border-bottom:1px solid #eee}#live time{color:#777;margin-right:.6em}@media (max-width:600px){body{padding:.6em;font-size:14px}td,th{padding:.25em .4em}}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        t = esc(title)
    )
}

fn figure(v: Option<f64>, places: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.places$}"))
}

/// A loop's status, iterations, quality, gate, cost, time and why it stopped, escaped for a
/// page.
fn figures(v: &LoopView) -> [String; 7] {
    let st = v.state.as_ref();
    let time = v
        .elapsed_secs
        .and_then(|s| u64::try_from(s).ok())
        .map_or("-".into(), |s| crate::ralph::progress::duration(s * 1000));
    [
        esc(v.status.as_str()),
        st.map_or("-".into(), |s| {
            format!("{}/{}", s.current_iteration, s.max_iterations)
        }),
        figure(st.and_then(|s| s.last_quality), 2),
        figure(st.and_then(|s| s.last_gate_score), 1),
        st.map_or("-".into(), |s| esc(&s.spend.shown())),
        time,
        esc(&why_stopped(v).unwrap_or_default()),
    ]
}

/// Why a loop stopped, in words (or what holds it now: a pause, a wait).
fn why_stopped(v: &LoopView) -> Option<String> {
    v.reason().or_else(|| {
        let st = v.state.as_ref()?;
        let r = st.stop_reason()?;
        let words = crate::ralph::progress::reason_words(r);
        Some(match st.stop_detail().filter(|d| !d.is_empty()) {
            Some(d) => format!("{words} ({d})"),
            None => words.to_string(),
        })
    })
}

/// One row of the index.
#[derive(Debug)]
pub struct Row<'a> {
    /// The loop.
    pub view: &'a LoopView,
    /// Its page (`/loop/<topic>`, `/remote/<topic>`).
    pub href: String,
    /// Quality and gate before → after (`0.22 → 0.60`, `6.1 → 7.4`), where known.
    pub lift: Option<(String, String)>,
}

/// The index: every loop, a row each.
#[must_use]
pub fn index(loops: &[Row<'_>]) -> String {
    let mut rows = String::new();
    for r in loops {
        let [s, it, q, g, c, time, why] = figures(r.view);
        let (q, g) = r.lift.as_ref().map_or((q, g), |(q, g)| (esc(q), esc(g)));
        rows.push_str(&format!(
            "<tr><td><a href=\"{href}\">{t}</a></td><td class=\"{s}\">{s}</td><td>{it}</td><td>{q}</td><td>{g}</td><td>{c}</td><td>{time}</td><td>{why}</td></tr>",
            t = esc(&r.view.topic),
            href = esc(&r.href),
        ));
    }
    let body = format!(
        "<h1>Loops</h1><table><tr><th>topic</th><th>status</th><th>iterations</th><th>quality before → after</th><th>gate r1 → final</th><th>cost</th><th>time</th><th>why it stopped</th></tr>{rows}</table>"
    );
    page("studio-agents: loops", &body)
}

/// One series of a chart: its name, its colour, its points (x, y).
pub type Series<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// A line chart of series over iterations, as SVG: `(name, colour, points (x, y))`, y from 0 to
/// `y_max`.
#[must_use]
pub fn chart(title: &str, series: &[Series<'_>], y_max: f64) -> String {
    let (w, h, pad) = (560.0, 200.0, 30.0);
    let xs = || {
        series
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|(x, _)| *x))
    };
    let x_max = xs().fold(1.0_f64, f64::max);
    // Iterations count from 1; a point at 0 is the loop's before (the original).
    let x_min = xs().fold(1.0_f64, f64::min).max(0.0);
    let sx = |x: f64| pad + (x - x_min).max(0.0) / (x_max - x_min).max(1.0) * (w - 2.0 * pad);
    let sy =
        |y: f64| h - pad - (y / y_max.max(f64::MIN_POSITIVE)).clamp(0.0, 1.0) * (h - 2.0 * pad);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{t}\"><text x=\"{pad}\" y=\"16\" font-size=\"12\">{t}</text><line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#999\"/><line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" stroke=\"#999\"/><text x=\"2\" y=\"{top}\" font-size=\"10\">{y_max}</text>",
        t = esc(title),
        b = h - pad,
        r = w - pad,
        top = pad + 4.0,
    );
    for (i, (name, colour, points)) in series.iter().enumerate() {
        let path: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        svg.push_str(&format!(
            "<polyline class=\"series\" data-name=\"{n}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{p}\"/><text x=\"{lx}\" y=\"28\" font-size=\"11\" fill=\"{colour}\">{n}</text>",
            n = esc(name),
            p = path.join(" "),
            lx = 70.0 + 70.0 * i as f64,
        ));
        for (x, y) in points {
            svg.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>",
                sx(*x),
                sy(*y)
            ));
        }
    }
    if x_min == 0.0 {
        svg.push_str(&format!(
            "<text x=\"{pad}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">before</text>",
            h - pad + 12.0
        ));
    }
    svg.push_str("</svg>");
    svg
}

/// Where a loop's page reads from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// This machine: diffs, controls and live updates.
    Local,
    /// The records a remote run pushed to this git remote: read-only, as of the visit.
    Remote(String),
}

/// Where a loop's chart starts (at "before", left of iteration 1): the original's built-in
/// quality (0–1) and the gate's first score (iteration 1's first round), the index's "before".
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Before {
    /// The original artifact's overall quality.
    pub quality: Option<f64>,
    /// The gate's first score.
    pub gate: Option<f64>,
}

/// One loop's page: `runs` its records, `reviews` each iteration's review's first line,
/// `before` where its chart starts.
#[must_use]
pub fn loop_page(
    v: &LoopView,
    runs: &[RunRecord],
    reviews: &[(u32, String)],
    before: Before,
    source: &Source,
) -> String {
    let t = esc(&v.topic);
    let iterations: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.record == RecordKind::Iteration)
        .collect();
    let gate_chart = gate_chart(&iterations, before);
    let cost_chart = cost_chart(runs);
    let local = *source == Source::Local;
    let rows: String = iterations
        .iter()
        .map(|r| iteration_row(r, reviews, &t, local))
        .collect();
    let head = loop_head(v, &t);
    let question = question_block(v, local);
    let (controls, live) = controls_and_live(v, source);
    let body = format!(
        "<p><a href=\"/\">all loops</a></p>{head}{question}{controls}{gate_chart}{cost_chart}<h2>Iterations</h2><table id=\"iterations\"><tr><th>iteration</th><th>outcome</th><th>gate</th><th>quality</th><th>cost</th><th>tests</th><th>review</th><th></th></tr>{rows}</table>{live}"
    );
    page(&format!("studio-agents: {}", v.topic), &body)
}

/// The chart of the gate's first and final scores and the quality ×10, from "before" on.
fn gate_chart(iterations: &[&RunRecord], before: Before) -> String {
    let point = |r: &RunRecord, y: Option<f64>| y.map(|y| (f64::from(r.iteration), y));
    let r1: Vec<(f64, f64)> = iterations
        .iter()
        .filter_map(|r| point(r, r.gate.as_ref().and_then(|g| g.wiggum_r1)))
        .collect();
    let at_before = |y: Option<f64>| y.map(|y| (0.0, y));
    let fin: Vec<(f64, f64)> = at_before(before.gate)
        .into_iter()
        .chain(
            iterations
                .iter()
                .filter_map(|r| point(r, r.gate.as_ref().and_then(|g| g.final_score))),
        )
        .collect();
    let quality: Vec<(f64, f64)> = at_before(before.quality.map(|q| q * 10.0))
        .into_iter()
        .chain(
            iterations
                .iter()
                .filter_map(|r| point(r, r.quality.as_ref().map(|q| q.overall * 10.0))),
        )
        .collect();
    chart(
        "gate (r1, final) and quality ×10, per iteration",
        &[
            ("r1", "#999", r1),
            ("final", "#06c", fin),
            ("quality", "#080", quality),
        ],
        10.0,
    )
}

/// The chart of the cumulative cost, or a line saying no agent reported one.
fn cost_chart(runs: &[RunRecord]) -> String {
    let mut spent = 0.0;
    let cost: Vec<(f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            spent += r.cost_usd?;
            Some((f64::from(r.iteration.max(1)), spent))
        })
        .collect();
    if cost.is_empty() {
        "<p>cost: unknown (no agent reported one)</p>".to_string()
    } else {
        let max = cost.iter().map(|(_, y)| *y).fold(0.01, f64::max);
        chart("cost (USD), cumulative", &[("cost", "#b60", cost)], max)
    }
}

/// One iteration's row: its figures, tests, review and (on this machine) a link to its diff.
fn iteration_row(r: &RunRecord, reviews: &[(u32, String)], t: &str, local: bool) -> String {
    let review = reviews
        .iter()
        .find(|(n, _)| *n == r.iteration)
        .map(|(_, l)| esc(l))
        .unwrap_or_default();
    let diff = if r.commit.is_some() && local {
        format!("<a href=\"/loop/{t}/diff/{}\">diff</a>", r.iteration)
    } else {
        String::new()
    };
    let tests = tests_cell(r);
    format!(
        "<tr class=\"iteration\"><td>{n}{a}</td><td>{o}</td><td>{g}</td><td>{q}</td><td>{c}</td><td>{tests}</td><td>{review}</td><td>{diff}</td></tr>",
        n = r.iteration,
        a = if r.attempt > 1 {
            format!(" (attempt {})", r.attempt)
        } else {
            String::new()
        },
        o = esc(r.outcome.as_str()),
        g = figure(r.gate.as_ref().and_then(|g| g.final_score), 1),
        q = figure(r.quality.as_ref().map(|q| q.overall), 2),
        c = r.cost_usd.map_or("-".into(), |c| format!("${c:.2}")),
    )
}

/// The validation's result; its failing output (the first failure first) unfolds.
fn tests_cell(r: &RunRecord) -> String {
    r.validation.as_ref().map_or(String::new(), |v| {
        if v.green {
            esc(&v.summary)
        } else {
            format!(
                "<details><summary>{}</summary><pre class=\"failing\">{}</pre></details>",
                esc(&v.summary),
                esc(&v.excerpt)
            )
        }
    })
}

/// The page's heading: the topic, its status, its figures and its result.
fn loop_head(v: &LoopView, t: &str) -> String {
    let [s, it, q, g, c, time, why] = figures(v);
    format!(
        "<h1>{t}</h1><p class=\"{s}\" id=\"status\">{s}</p><p>iterations {it} · quality {q} · gate {g} · cost {c} · time {time} · {why}</p>{result}",
        result = v
            .state
            .as_ref()
            .and_then(crate::ralph::progress::result_of)
            .map_or(String::new(), |r| format!(
                "<p id=\"result\">result: {}</p>",
                esc(&r)
            ))
    )
}

/// The controls and the live feed here; for a remote run, a line saying where it was read from.
fn controls_and_live(v: &LoopView, source: &Source) -> (String, String) {
    match source {
        Source::Local => (
            "<p><button data-act=\"pause\">pause</button><button data-act=\"resume\">resume</button><button data-act=\"stop\">stop</button><span id=\"said\"></span></p>".to_string(),
            format!("<h2>Live</h2><div id=\"live\"></div>{}", live_script(&v.topic)),
        ),
        Source::Remote(url) => (
            format!(
                "<p id=\"remote\">read from the records a remote run pushed to {}; reload for news (its controls are the Job's)</p>",
                esc(url)
            ),
            String::new(),
        ),
    }
}

/// The script behind the controls, the answer field and the live feed.
fn live_script(topic: &str) -> String {
    format!(
        "<script>const topic={topic};\
document.querySelectorAll('button[data-act]').forEach(b=>b.onclick=async()=>{{const r=await fetch('/loop/'+topic+'/'+b.dataset.act,{{method:'POST',credentials:'same-origin'}});document.getElementById('said').textContent=' '+(await r.text());}});\
const ans=document.getElementById('answer');if(ans){{document.getElementById('answer-send').onclick=async()=>{{const r=await fetch('/loop/'+topic+'/answer',{{method:'POST',credentials:'same-origin',body:ans.value}});document.getElementById('answered').textContent=' '+(await r.text());}};}}\
const live=document.getElementById('live');const loaded=Date.now();\
const local=t=>{{const d=new Date(t);return [d.getHours(),d.getMinutes(),d.getSeconds()].map(n=>String(n).padStart(2,'0')).join(':');}};\
const es=new EventSource('/loop/'+topic+'/feed');\
es.onmessage=m=>{{const e=JSON.parse(m.data);const d=document.createElement('div');d.className='line '+e.kind;\
const at=document.createElement('time');at.dateTime=e.at;at.textContent=local(e.at);\
d.append(at,e.line+(e.until?' '+local(e.until):''));live.append(d);live.scrollTop=live.scrollHeight;\
if(e.kind==='end'){{es.close();}}\
if((e.kind==='run'||e.kind==='end')&&Date.parse(e.at)>loaded){{setTimeout(()=>location.reload(),300);}}}};</script>",
        topic = serde_json::to_string(topic).unwrap_or_default()
    )
}

/// The question an agent asked, and (on this machine's dashboard) a field to answer it.
fn question_block(v: &LoopView, local: bool) -> String {
    let Some(q) = v.question() else {
        return String::new();
    };
    let open = v
        .state
        .as_ref()
        .and_then(|s| s.question.as_ref())
        .is_some_and(|q| q.answer.is_none())
        && !v.answer_given;
    let form = if local && open {
        "<input id=\"answer\" size=\"60\" placeholder=\"your answer\"><button id=\"answer-send\">answer</button><span id=\"answered\"></span>"
    } else {
        ""
    };
    format!("<p id=\"question\">question: {}</p>{form}", esc(&q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_charts_plot_their_points() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(
            esc("keep \u{2066}\u{202E}<b>txt.exe\u{2069}\u{200E}"),
            "keep &lt;b&gt;txt.exe"
        );
        let svg = chart(
            "t",
            &[("final", "#06c", vec![(1.0, 5.0), (3.0, 10.0)])],
            10.0,
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        // x from the left edge to the right, y 5 halfway and 10 at the top.
        assert!(svg.contains("points=\"30.0,100.0 530.0,30.0\""), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(!svg.contains(">before<"), "{svg}");
        // A point at 0 is the loop's before: the left edge, named.
        let svg = chart(
            "t",
            &[("final", "#06c", vec![(0.0, 5.0), (1.0, 10.0)])],
            10.0,
        );
        assert!(svg.contains("points=\"30.0,100.0 530.0,30.0\""), "{svg}");
        assert!(svg.contains(">before</text>"), "{svg}");
    }
}
