//! Form without substance, found in a Markdown document without a model: templated or repeated
//! lines (one paragraph under several headings is the same thing), lorem ipsum, word salad
//! (sentences without the function words real prose is made of), placeholder domains given as
//! evidence, impossible dates, and the task's own words stuffed in. The built-in judge scales
//! its scores by what is found here and names each finding; the metrics do not count a
//! placeholder link as evidence. Pure.

use std::collections::BTreeSet;

use crate::quality::markdown::{self, Block};

/// English function words: prose uses them in almost every sentence; lists of keywords do not.
const FUNCTION: [&str; 86] = [
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "because",
    "been", "before", "but", "by", "can", "could", "did", "do", "does", "each", "every", "for",
    "from", "had", "has", "have", "he", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "may", "might", "more", "most", "must", "no", "not", "of", "on", "one", "only", "or", "other",
    "our", "out", "per", "same", "she", "should", "so", "some", "still", "such", "than", "that",
    "the", "their", "then", "there", "these", "they", "this", "those", "to", "up", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "why", "will", "with",
];

/// Latin filler, as lorem ipsum generators write it.
const LOREM: [&str; 16] = [
    "lorem",
    "ipsum",
    "dolor",
    "amet",
    "consectetur",
    "adipiscing",
    "eiusmod",
    "tempor",
    "incididunt",
    "labore",
    "dolore",
    "aliqua",
    "veniam",
    "nostrud",
    "exercitation",
    "ullamco",
];

/// Words too common to say what a task is about.
const STOP: [&str; 20] = [
    "this", "that", "with", "from", "have", "will", "what", "about", "into", "your", "their",
    "there", "which", "when", "where", "should", "would", "could", "make", "more",
];

/// What was found, with the figures that decided it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Substance {
    /// Text blocks of six words or more.
    pub blocks: usize,
    /// Of those, blocks that repeat another's words (digits aside): templated or copied.
    pub templated: usize,
    /// A templated block, for the finding.
    pub template_example: Option<String>,
    /// Prose blocks of eight words or more.
    pub prose: usize,
    /// Of those, blocks with almost no function words.
    pub salad: usize,
    /// Distinct lorem ipsum words.
    pub lorem: usize,
    /// Links in the document.
    pub links: usize,
    /// Of those, links to placeholder domains (`example.com`, `*.test`, ...).
    pub placeholder_links: usize,
    /// Dates no calendar has (`2026-02-30`, month 13).
    pub impossible_dates: Vec<String>,
    /// Share of the document's content words that are the task's own words.
    pub task_density: f64,
}

/// How similar two blocks' words must be (Jaccard) to count as one template.
const TEMPLATE_SIMILARITY: f64 = 0.6;
/// The share of function words below which a block of prose is word salad.
const SALAD_FUNCTION_SHARE: f64 = 0.12;
/// The share of content words that may be the task's own before it is stuffing.
const STUFFING_DENSITY: f64 = 0.25;
/// At most this many blocks are compared pairwise (the judge sees a bounded excerpt anyway).
const MAX_BLOCKS: usize = 400;

impl Substance {
    /// The share of blocks that are templated.
    #[must_use]
    pub fn templated_share(&self) -> f64 {
        share(self.templated, self.blocks)
    }

    /// The share of prose that is word salad.
    #[must_use]
    pub fn salad_share(&self) -> f64 {
        share(self.salad, self.prose)
    }

    /// Whether the document is largely lorem ipsum.
    #[must_use]
    pub fn is_lorem(&self) -> bool {
        self.lorem >= 3
    }

    /// The penalty, 0 (none) to 0.8, each finding weighted by how much of the document it is.
    #[must_use]
    pub fn penalty(&self) -> f64 {
        let over = |v: f64, from: f64| ((v - from) / (1.0 - from)).clamp(0.0, 1.0);
        let p = 0.9 * over(self.templated_share(), 0.15)
            + 0.9 * over(self.salad_share(), 0.15)
            + if self.is_lorem() { 0.6 } else { 0.0 }
            + 0.6 * share(self.placeholder_links, self.links)
            + 0.15 * count_f64(self.impossible_dates.len())
            + 1.5 * (self.task_density - STUFFING_DENSITY).max(0.0);
        p.min(0.8)
    }

    /// One line per finding, for the judge's issues.
    #[must_use]
    pub fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.templated_share() > 0.15 {
            let eg = self
                .template_example
                .as_deref()
                .map(|e| format!(" (e.g. \"{}\")", clip(e, 60)))
                .unwrap_or_default();
            out.push(format!(
                "substance: {} of {} blocks repeat one template or another block{eg}; say each point once, in its own words, with its own evidence",
                self.templated, self.blocks
            ));
        }
        if self.salad_share() > 0.15 {
            out.push(format!(
                "substance: {} of {} paragraphs are lists of keywords, not sentences; explain in prose what happened and why",
                self.salad, self.prose
            ));
        }
        if self.is_lorem() {
            out.push(
                "substance: lorem ipsum filler; replace it with the document's content".into(),
            );
        }
        if self.placeholder_links > 0 {
            out.push(format!(
                "grounded: {} of {} links point at placeholder domains (example.com, .test, ...); cite the real source",
                self.placeholder_links, self.links
            ));
        }
        if !self.impossible_dates.is_empty() {
            out.push(format!(
                "grounded: dates no calendar has ({}); give the real dates",
                self.impossible_dates.join(", ")
            ));
        }
        if self.task_density > STUFFING_DENSITY {
            out.push(format!(
                "relevance: {:.0}% of the words repeat the task's own; answer it instead of restating it",
                self.task_density * 100.0
            ));
        }
        out
    }
}

/// Analyse `doc` for the task `task`.
#[must_use]
pub fn analyse(task: &str, doc: &str) -> Substance {
    let blocks: Vec<Block> = markdown::sections(doc)
        .iter()
        .flat_map(|s| markdown::blocks(&s.body))
        .collect();
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Para(t) | Block::Item(t) => Some(t.as_str()),
            Block::Code(_) => None,
        })
        .take(MAX_BLOCKS)
        .collect();
    let mut s = Substance::default();
    templated(&texts, &mut s);
    let mut lorem = BTreeSet::new();
    let task_words: BTreeSet<String> = content_words(task).collect();
    let (mut content, mut on_task) = (0usize, 0usize);
    for t in &texts {
        let words: Vec<String> = prose_words(t).collect();
        if words.len() >= 8 {
            s.prose += 1;
            let function = words
                .iter()
                .filter(|w| FUNCTION.contains(&w.as_str()))
                .count();
            if share(function, words.len()) < SALAD_FUNCTION_SHARE {
                s.salad += 1;
            }
        }
        lorem.extend(
            words
                .iter()
                .filter(|w| LOREM.contains(&w.as_str()))
                .cloned(),
        );
        for w in content_words(&strip_code_and_links(t)) {
            content += 1;
            on_task += usize::from(task_words.contains(&w));
        }
    }
    s.lorem = lorem.len();
    s.task_density = if task_words.is_empty() {
        0.0
    } else {
        share(on_task, content)
    };
    for url in urls(doc) {
        s.links += 1;
        s.placeholder_links += usize::from(is_placeholder_host(host(url)));
    }
    s.impossible_dates = impossible_dates(doc);
    s
}

/// `text` with links to placeholder domains taken out (a Markdown link keeps its label), so
/// that they do not count as evidence.
#[must_use]
pub fn without_placeholder_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = find_url(rest) {
        let url_end = i + url_len(&rest[i..]);
        let url = &rest[i..url_end];
        if is_placeholder_host(host(url)) {
            let before = &rest[..i];
            // `[label](url)`: keep the label, drop `](url)` and the `[`.
            if let (Some(stripped), true) =
                (before.strip_suffix("]("), rest[url_end..].starts_with(')'))
            {
                match stripped.rfind('[') {
                    Some(open) => {
                        out.push_str(&stripped[..open]);
                        out.push_str(&stripped[open + 1..]);
                    }
                    None => out.push_str(stripped),
                }
                rest = &rest[url_end + 1..];
                continue;
            }
            out.push_str(before);
        } else {
            out.push_str(&rest[..url_end]);
        }
        rest = &rest[url_end..];
    }
    out.push_str(rest);
    out
}

fn templated(texts: &[&str], s: &mut Substance) {
    let sets: Vec<Vec<u64>> = texts.iter().map(|t| shape(t)).collect();
    let mut marked = vec![false; sets.len()];
    for i in 0..sets.len() {
        if sets[i].len() < 6 {
            continue;
        }
        s.blocks += 1;
        for j in 0..sets.len() {
            if i != j && sets[j].len() >= 6 && jaccard(&sets[i], &sets[j]) >= TEMPLATE_SIMILARITY {
                marked[i] = true;
                break;
            }
        }
        if marked[i] {
            s.templated += 1;
            if s.template_example.is_none() {
                s.template_example = Some(texts[i].to_string());
            }
        }
    }
}

/// A block's distinct words with every run of digits made one (lines from one template look
/// alike), each as a 64-bit FNV-1a hash, sorted: blocks are compared pairwise, so cheaply.
fn shape(t: &str) -> Vec<u64> {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut out: Vec<u64> = t
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut h = OFFSET;
            let mut digit = false;
            for c in w.chars().flat_map(char::to_lowercase) {
                let c = if c.is_ascii_digit() {
                    if digit {
                        continue;
                    }
                    digit = true;
                    '0'
                } else {
                    digit = false;
                    c
                };
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(PRIME);
                }
            }
            h
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The Jaccard similarity of two sorted sets (0 when their sizes alone rule out a template).
#[allow(clippy::cast_precision_loss)]
fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (small, large) = (a.len().min(b.len()), a.len().max(b.len()));
    if large == 0 || (small as f64) < TEMPLATE_SIMILARITY * large as f64 {
        return 0.0;
    }
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// The words of prose: code spans and links taken out, letters only, lowercased.
fn prose_words(t: &str) -> impl Iterator<Item = String> {
    strip_code_and_links(t)
        .split(|c: char| !c.is_alphabetic() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .into_iter()
}

/// Words of four letters or more that say what a text is about.
pub fn content_words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
}

fn strip_code_and_links(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut in_code = false;
    for part in t.split('`') {
        if !in_code {
            out.push_str(part);
            out.push(' ');
        }
        in_code = !in_code;
    }
    out.split_whitespace()
        .filter(|w| !w.contains("://"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where the first `http://` or `https://` begins (one pass: a document of many links is read
/// once, not once per link).
fn find_url(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find("http") {
        let at = from + i;
        let rest = &s[at + 4..];
        if rest.starts_with("://") || rest.starts_with("s://") {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

fn url_len(s: &str) -> usize {
    s.find(|c: char| c.is_whitespace() || matches!(c, ')' | '>' | '"' | '\'' | ']' | '`'))
        .unwrap_or(s.len())
}

fn urls(doc: &str) -> impl Iterator<Item = &str> {
    let mut rest = doc;
    std::iter::from_fn(move || {
        let i = find_url(rest)?;
        let end = i + url_len(&rest[i..]);
        let url = &rest[i..end];
        rest = &rest[end..];
        Some(url)
    })
}

fn host(url: &str) -> &str {
    let after = url.split_once("://").map_or(url, |(_, r)| r);
    let end = after.find(['/', ':', '?', '#']).unwrap_or(after.len());
    let host = &after[..end];
    host.rsplit_once('@').map_or(host, |(_, h)| h)
}

/// The domains reserved for examples and tests (RFC 2606, RFC 6761), and their subdomains.
fn is_placeholder_host(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    ["example.com", "example.net", "example.org"]
        .iter()
        .any(|d| h == *d || h.ends_with(&format!(".{d}")))
        || ["example", "test", "invalid"]
            .iter()
            .any(|tld| h == *tld || h.ends_with(&format!(".{tld}")))
}

/// `YYYY-MM-DD` dates with a month or day no calendar has.
fn impossible_dates(doc: &str) -> Vec<String> {
    let b = doc.as_bytes();
    let mut out = Vec::new();
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let mut i = 0;
    while i + 10 <= b.len() {
        let w = &b[i..i + 10];
        let bounded = (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && b.get(i + 10).is_none_or(|c| !c.is_ascii_digit());
        if bounded
            && digits(&w[..4])
            && w[4] == b'-'
            && digits(&w[5..7])
            && w[7] == b'-'
            && digits(&w[8..])
        {
            let num = |s: &[u8]| s.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
            let (y, m, d) = (num(&w[..4]), num(&w[5..7]), num(&w[8..]));
            if d == 0 || m == 0 || m > 12 || d > days_in_month(y, m) {
                out.push(String::from_utf8_lossy(w).into_owned());
            }
            i += 10;
        } else {
            i += 1;
        }
    }
    out.dedup();
    out.truncate(5);
    out
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        2 => 28,
        _ => 31,
    }
}

#[allow(clippy::cast_precision_loss)]
fn share(n: usize, d: usize) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}

#[allow(clippy::cast_precision_loss)]
fn count_f64(n: usize) -> f64 {
    n as f64
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests;
