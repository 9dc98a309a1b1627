//! What a task names: its specific terms, each weighted by how much it says about the task.
//! Code-formatted and quoted names and identifiers (`ETag`, `Cache-Control`, `iam.roles.get`)
//! weigh most; then capitalised words and acronyms, numbers, and rare words, weighted by their
//! rank in a built-in list of English words by frequency (`english-words.txt`); the common words
//! of English are no terms at all. Words are compared by a crude stem (`caching` names
//! `cache`). Pure; the frequency list is read once from the binary.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The most frequent English words, most frequent first (wordfreq; see the file's header).
const ENGLISH: &str = include_str!("english-words.txt");

/// How a term is written in the task, which says how specific it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A word, weighted by its rarity alone.
    Word,
    /// A capitalised word (not the first of a sentence) or an acronym.
    Capitalised,
    /// A number of two characters or more.
    Number,
    /// Code-formatted or quoted, or an identifier: mixed case, digits in letters, `-`, `_`,
    /// `.`, `/` or `::` between its parts.
    Name,
}

/// One term of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// As the task writes it.
    pub text: String,
    /// What a document's word must be to name it: the stem of a word, the lowercase of a name.
    pub key: String,
    /// How it is written.
    pub kind: Kind,
    /// How much naming it counts, 0–3.
    pub weight: f64,
}

impl Term {
    /// Whether this is one of the task's most specific terms (a name).
    #[must_use]
    pub fn is_name(&self) -> bool {
        self.kind == Kind::Name
    }
}

/// Words ranked above this are common: no term (the task's "common words").
const COMMON_RANK: f64 = 800.0;
/// Words ranked below this (or not in the list) are rare: full weight.
const RARE_RANK: f64 = 20_000.0;
/// A word term lighter than this is left out.
const MIN_WEIGHT: f64 = 0.15;
/// A name's weight (a word's is at most 1).
const NAME_WEIGHT: f64 = 3.0;

/// A word's rank in the frequency list (1 is the most frequent), `None` when it is not in it.
#[must_use]
pub fn rank(word: &str) -> Option<u32> {
    static RANKS: OnceLock<HashMap<&'static str, u32>> = OnceLock::new();
    RANKS
        .get_or_init(|| {
            // Sized once: grown entry by entry, the table would be rebuilt a dozen times.
            let mut ranks = HashMap::with_capacity(ENGLISH.len() / 6);
            let words = ENGLISH
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with('#'));
            ranks.extend(words.zip(1..));
            ranks
        })
        .get(word)
        .copied()
}

/// How rare a lowercase word is, 0 (among the most common of English) to 1 (rare or unknown).
#[must_use]
pub fn rarity(word: &str) -> f64 {
    rank(word).map_or(1.0, |r| {
        let r = f64::from(r);
        ((r.ln() - COMMON_RANK.ln()) / (RARE_RANK.ln() - COMMON_RANK.ln())).clamp(0.0, 1.0)
    })
}

const SUFFIXES: [&str; 12] = [
    "ments", "ment", "ings", "ing", "ures", "ure", "ions", "ion", "ers", "er", "es", "ed",
];

/// A crude stem: a lowercase word without its commonest English suffix (`caching`, `caches`
/// and `cache` are `cach`; `rotating` and `rotation` are `rotat`).
#[must_use]
pub fn stem(word: &str) -> &str {
    for s in SUFFIXES.iter().chain(&["s", "e", "y"]) {
        if let Some(base) = word.strip_suffix(s)
            && base.chars().count() >= 3
        {
            return base;
        }
    }
    word
}

/// The specific terms of `task`, heaviest first, one per key.
#[must_use]
pub fn of_task(task: &str) -> Vec<Term> {
    let mut out: Vec<Term> = Vec::new();
    let mut add = |t: Term| match out.iter_mut().find(|o| o.key == t.key) {
        Some(o) if o.weight < t.weight => *o = t,
        Some(_) => {}
        None => out.push(t),
    };
    let (quoted, rest) = split_quoted(task);
    for q in quoted {
        add(name(&q));
    }
    let mut initial = true;
    for raw in rest.split_whitespace() {
        let ends_sentence = raw.ends_with(['.', '!', '?', ':']);
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if !w.is_empty()
            && let Some(t) = classify(w, initial)
        {
            add(t);
        }
        initial = ends_sentence || raw == "—" || raw == "-";
    }
    out.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    out
}

/// Code spans and quotations of a task, and the task without them.
fn split_quoted(task: &str) -> (Vec<String>, String) {
    let mut quoted = Vec::new();
    let mut rest = String::with_capacity(task.len());
    let mut chars = task.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let close = match c {
            '`' => Some('`'),
            '"' => Some('"'),
            '“' => Some('”'),
            _ => None,
        };
        if let Some(close) = close
            && let Some(len) = task[i + c.len_utf8()..].find(close)
        {
            let inner = &task[i + c.len_utf8()..i + c.len_utf8() + len];
            if !inner.trim().is_empty() && inner.len() <= 80 {
                quoted.push(inner.trim().to_string());
                rest.push_str(" , ");
                let end = i + c.len_utf8() + len + close.len_utf8();
                while chars.peek().is_some_and(|(j, _)| *j < end) {
                    chars.next();
                }
                continue;
            }
        }
        rest.push(c);
    }
    (quoted, rest)
}

fn name(text: &str) -> Term {
    Term {
        text: text.to_string(),
        key: text.to_lowercase(),
        kind: Kind::Name,
        weight: NAME_WEIGHT,
    }
}

/// Whether a word is an identifier: mixed case past its first letter, letters and digits
/// together, or parts joined by `-`, `_`, `.`, `/`, `:`.
fn is_identifier(w: &str) -> bool {
    let joined = w.contains(['_', '.', '/', ':'])
        || (w.contains('-') && w.split('-').filter(|p| !p.is_empty()).count() >= 2);
    let letters = w.chars().filter(|c| c.is_alphabetic()).count();
    let upper_inside =
        w.chars().skip(1).any(char::is_uppercase) && w.chars().any(char::is_lowercase);
    let mixed_digits = letters > 0 && w.chars().any(|c| c.is_ascii_digit());
    joined || upper_inside || mixed_digits
}

fn classify(w: &str, initial: bool) -> Option<Term> {
    let lower = w.to_lowercase();
    if w.chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
    {
        return (w.chars().filter(char::is_ascii_digit).count() >= 2).then(|| Term {
            text: w.to_string(),
            key: lower,
            kind: Kind::Number,
            weight: 1.0,
        });
    }
    if is_identifier(w) {
        return Some(name(w));
    }
    let r = rarity(&lower);
    let acronym = w.chars().count() >= 2 && w.chars().all(|c| c.is_uppercase());
    let capitalised = !initial && w.chars().next().is_some_and(char::is_uppercase);
    let (kind, weight) = if acronym || capitalised {
        (Kind::Capitalised, r.max(0.7))
    } else {
        (Kind::Word, r)
    };
    (weight >= MIN_WEIGHT && w.chars().count() >= 2).then(|| Term {
        text: w.to_string(),
        key: stem(&lower).to_string(),
        kind,
        weight,
    })
}

/// Whether a document's key names a term's key: the same, or one begins the other and the
/// shorter has five letters or more (`recommend` names `recommendat`, from `recommendations`).
#[must_use]
pub fn names(term: &str, key: &str) -> bool {
    let (short, long) = if term.len() <= key.len() {
        (term, key)
    } else {
        (key, term)
    };
    short == long || (short.len() >= 5 && long.starts_with(short))
}

/// The keys a lowercase text names terms by: each whitespace-separated chunk without the
/// punctuation around it (and without a plural `s`), for names, and the stem of each word in it.
/// Borrowed from `lower`: a document is read without a string per word.
pub fn keys(lower: &str) -> impl Iterator<Item = &str> {
    lower
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '(' | ')' | '[' | ']' | ',' | '"'))
        .flat_map(|chunk| {
            let trimmed = chunk.trim_matches(|c: char| !c.is_alphanumeric());
            let plural = trimmed.strip_suffix('s').filter(|p| p.len() >= 3);
            let words = trimmed
                .split(|c: char| !c.is_alphanumeric())
                .filter(|p| !p.is_empty())
                .map(stem);
            std::iter::once(trimmed)
                .filter(|t| !t.is_empty())
                .chain(plural)
                .chain(words)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(task: &str) -> Vec<(String, Kind)> {
        of_task(task)
            .into_iter()
            .map(|t| (t.text, t.kind))
            .collect()
    }

    #[test]
    fn the_frequency_list_ranks_common_words_first() {
        assert_eq!(rank("the"), Some(1));
        assert!(rank("report").unwrap() < 1000);
        assert!(rank("caching").is_none());
        assert!(rarity("report").abs() < 1e-9);
        assert!((rarity("etag") - 1.0).abs() < 1e-9);
        assert!(rarity("monarch") > 0.7);
    }

    #[test]
    fn a_tasks_names_weigh_most_and_its_common_words_are_no_terms() {
        let terms = texts(
            "Write a research report on HTTP caching headers (Cache-Control, ETag) for our CDN team",
        );
        let names: Vec<&str> = terms
            .iter()
            .filter(|(_, k)| *k == Kind::Name)
            .map(|(t, _)| t.as_str())
            .collect();
        assert_eq!(names, ["Cache-Control", "ETag"]);
        for common in ["Write", "research", "report", "team", "our"] {
            assert!(
                !terms.iter().any(|(t, _)| t == common),
                "{common}: {terms:?}"
            );
        }
        for other in ["HTTP", "caching", "headers", "CDN"] {
            assert!(terms.iter().any(|(t, _)| t == other), "{other}: {terms:?}");
        }
    }

    #[test]
    fn code_quotes_numbers_and_identifiers_are_names_or_numbers() {
        let terms = texts(
            "Make `internal/roles/client.go` retry \"transient errors\" on gRPC code 14 in v4.2 via max_attempts",
        );
        for (t, k) in [
            ("internal/roles/client.go", Kind::Name),
            ("transient errors", Kind::Name),
            ("gRPC", Kind::Name),
            ("14", Kind::Number),
            ("v4.2", Kind::Name),
            ("max_attempts", Kind::Name),
        ] {
            assert!(terms.contains(&(t.to_string(), k)), "{t}: {terms:?}");
        }
    }

    #[test]
    fn stems_join_a_words_forms() {
        for (a, b) in [
            ("caching", "cache"),
            ("caches", "cache"),
            ("recommendations", "recommend"),
            ("failures", "fails"),
            ("rotating", "rotation"),
        ] {
            assert!(names(stem(a), stem(b)), "{a} {b}");
        }
        assert!(!names(stem("tag"), stem("tagline")));
        let lower = "Set `Cache-Control: max-age=60` and ETags.".to_lowercase();
        let k: Vec<&str> = keys(&lower).collect();
        for want in ["cache-control", "max-age=60", "etag", "cach"] {
            assert!(k.contains(&want), "{want}: {k:?}");
        }
    }
}
