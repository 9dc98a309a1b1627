//! A small Markdown reader: sections by heading, text blocks (paragraphs and list items) and
//! fenced code blocks. Enough for the heuristic metrics and heading-preserving compression. Pure.

/// One section: a heading (or none, for text before the first heading) and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Heading level (1–6), 0 for the preamble.
    pub level: usize,
    /// Heading text without the `#`s.
    pub title: String,
    /// The heading line as written (empty for the preamble).
    pub heading_line: String,
    /// Body lines, verbatim.
    pub body: String,
}

/// A block of body text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A paragraph (joined lines).
    Para(String),
    /// A list item (marker removed).
    Item(String),
    /// A fenced code block's content.
    Code(String),
}

/// An ATX heading line's level and text: one to six `#`, then a space, a tab or the line's
/// end, indented by at most three spaces (four make an indented code line), as CommonMark reads
/// it.
pub fn heading(line: &str) -> Option<(usize, &str)> {
    let body = line.trim_start_matches(' ');
    if line.len() - body.len() > 3 {
        return None;
    }
    let hashes = body.bytes().take_while(|c| *c == b'#').count();
    let rest = &body[hashes..];
    let ok = (1..=6).contains(&hashes)
        && (rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t'));
    ok.then(|| (hashes, rest.trim()))
}

/// A code fence line: its character (`` ` `` or `~`) and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    char: u8,
    len: usize,
}

impl Fence {
    /// Whether this fence line (`line`, indentation removed) closes the block `open` began: the
    /// same character, at least as many, and nothing after them (CommonMark's rule, so a fence
    /// of four backticks can show a fence of three inside it).
    pub fn closes(self, open: Fence, line: &str) -> bool {
        self.char == open.char && self.len >= open.len && line[self.len..].trim().is_empty()
    }
}

/// The fence a line opens or closes, if it is one: three or more backticks or tildes, indented
/// by at most three spaces (four make an indented code line).
pub fn fence_of(raw: &str) -> Option<Fence> {
    let indent = raw.len() - raw.trim_start_matches(' ').len();
    let line = &raw[indent..];
    let char = *line
        .as_bytes()
        .first()
        .filter(|c| matches!(c, b'`' | b'~'))?;
    let len = line.bytes().take_while(|c| *c == char).count();
    // A backtick fence's info string holds no backtick (else it is inline code).
    let ok = indent <= 3 && len >= 3 && !(char == b'`' && line[len..].contains('`'));
    ok.then_some(Fence { char, len })
}

/// Split a document into sections, ignoring `#` lines inside code fences.
#[must_use]
pub fn sections(doc: &str) -> Vec<Section> {
    let mut out = vec![Section {
        level: 0,
        title: String::new(),
        heading_line: String::new(),
        body: String::new(),
    }];
    let mut fence: Option<Fence> = None;
    for line in doc.lines() {
        let t = line.trim_start();
        let mark = fence_of(line);
        let in_fence = match (fence, mark) {
            (Some(open), Some(f)) if f.closes(open, t) => {
                fence = None;
                true
            }
            (Some(_), _) => true,
            (None, Some(f)) => {
                fence = Some(f);
                true
            }
            (None, None) => false,
        };
        if !in_fence && let Some((level, title)) = heading(line) {
            out.push(Section {
                level,
                title: title.to_string(),
                heading_line: line.to_string(),
                body: String::new(),
            });
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.body.push_str(line);
            last.body.push('\n');
        }
    }
    if out[0].body.trim().is_empty() && out.len() > 1 {
        out.remove(0);
    }
    out
}

fn list_marker(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for m in ["- ", "* ", "+ "] {
        if let Some(r) = t.strip_prefix(m) {
            return Some(r);
        }
    }
    let digits = t.find(|c: char| !c.is_ascii_digit())?;
    if digits > 0 {
        return t[digits..]
            .strip_prefix(". ")
            .or_else(|| t[digits..].strip_prefix(") "));
    }
    None
}

/// The blocks of a body of text.
#[must_use]
pub fn blocks(body: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut para = String::new();
    let mut code: Option<String> = None;
    let flush = |para: &mut String, out: &mut Vec<Block>| {
        if !para.trim().is_empty() {
            out.push(Block::Para(para.trim().to_string()));
        }
        para.clear();
    };
    let mut fence: Option<Fence> = None;
    for line in body.lines() {
        let t = line.trim_start();
        if let Some(f) = fence_of(line) {
            match fence {
                Some(open) if f.closes(open, t) => {
                    fence = None;
                    out.extend(code.take().map(Block::Code));
                    continue;
                }
                Some(_) => {}
                None => {
                    flush(&mut para, &mut out);
                    fence = Some(f);
                    code = Some(String::new());
                    continue;
                }
            }
        }
        if let Some(c) = code.as_mut() {
            c.push_str(line);
            c.push('\n');
            continue;
        }
        if t.is_empty() || heading(line).is_some() {
            flush(&mut para, &mut out);
        } else if let Some(item) = list_marker(line) {
            flush(&mut para, &mut out);
            out.push(Block::Item(item.trim().to_string()));
        } else {
            if !para.is_empty() {
                para.push(' ');
            }
            para.push_str(t);
        }
    }
    flush(&mut para, &mut out);
    if let Some(c) = code {
        out.push(Block::Code(c));
    }
    out
}

/// Words in a text.
#[must_use]
pub fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sections_and_ignores_hashes_in_code() {
        let doc = "intro\n# Title\n## A\ntext\n```\n# not a heading\n```\n## B\nmore\n";
        let s = sections(doc);
        let titles: Vec<_> = s.iter().map(|s| (s.level, s.title.as_str())).collect();
        assert_eq!(titles, vec![(0, ""), (1, "Title"), (2, "A"), (2, "B")]);
        assert!(s[2].body.contains("# not a heading"));
    }

    #[test]
    fn blocks_separate_paragraphs_items_and_code() {
        let b = blocks("one\ntwo\n\n- item a\n2. item b\n```sh\nls\n```\nlast");
        assert_eq!(
            b,
            vec![
                Block::Para("one two".into()),
                Block::Item("item a".into()),
                Block::Item("item b".into()),
                Block::Code("ls\n".into()),
                Block::Para("last".into()),
            ]
        );
    }

    #[test]
    fn a_longer_fence_shows_a_shorter_one_inside_it() {
        let doc = "# A\n````md\n```\n# not a heading\n```\n````\n# B\ntext\n";
        let titles: Vec<_> = sections(doc).into_iter().map(|s| s.title).collect();
        assert_eq!(titles, ["A", "B"]);
        assert_eq!(
            blocks("````\n```\nls\n```\n````\nafter"),
            vec![
                Block::Code("```\nls\n```\n".into()),
                Block::Para("after".into())
            ]
        );
    }

    #[test]
    fn headings_as_commonmark_reads_them() {
        for (line, want) in [
            ("# A", Some((1, "A"))),
            ("   ## B", Some((2, "B"))),
            ("##\tTab", Some((2, "Tab"))),
            ("###", Some((3, ""))),
            ("###### Six", Some((6, "Six"))),
            ("####### Seven", None),
            ("    # indented code", None),
            ("#tag", None),
        ] {
            assert_eq!(heading(line), want, "{line:?}");
        }
    }

    #[test]
    fn hashtag_without_space_is_not_a_heading() {
        assert_eq!(sections("#tag\ntext").len(), 1);
    }
}
