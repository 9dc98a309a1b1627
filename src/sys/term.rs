//! Text for a person's terminal: whatever an agent wrote (a review, a log, a stop's detail) is
//! shown with its control sequences removed, so it cannot set the window's title (OSC 0), write
//! the clipboard (OSC 52), move the cursor or repaint what was shown before (CSI), nor hide
//! itself. Escape sequences (CSI, OSC, DCS, SOS, PM, APC, two-byte escapes), their 8-bit (C1)
//! forms and every other control byte except newline and tab are dropped, and so are the
//! bidirectional controls (embeddings, overrides, isolates and marks: U+202A–U+202E,
//! U+2066–U+2069, U+200E, U+200F, U+061C), which reorder what is shown so that it reads as
//! something else. A byte-level state machine, so a stream cut anywhere (a log copied in chunks)
//! is filtered as a whole would be. Pure.

use std::io::Write;

/// Where the filter is within a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Text.
    #[default]
    Ground,
    /// After ESC.
    Esc,
    /// After ESC and intermediate bytes (`ESC ( B`).
    EscIntermediate,
    /// In a control sequence (`ESC [` or C1 CSI), until its final byte.
    Csi,
    /// In a string (OSC, DCS, SOS, PM, APC), until BEL, ST or the end of the line.
    Str,
    /// ESC inside a string: `\` ends it.
    StrEsc,
    /// 0xC2 seen in text: the next byte says whether it is a C1 control.
    C2,
    /// 0xC2 seen inside a string: 0x9C (ST) ends it.
    StrC2,
    /// 0xE2 seen in text: it may begin a bidirectional control (U+200E…U+2069).
    E2,
    /// 0xE2 then this byte (0x80 or 0x81) seen in text.
    E2Then(u8),
    /// 0xD8 seen in text: 0x9C after it is U+061C, the Arabic letter mark.
    D8,
}

/// Whether `c` is a bidirectional control: an embedding, override or isolate, or a mark
/// (`printable` drops them).
#[must_use]
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Whether `c` shows nothing (zero-width characters and joiners, the byte-order mark, a soft
/// hyphen, tag characters, Hangul fillers): text that hides words, in a line a person reads.
#[must_use]
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{200B}'..='\u{200D}'
            | '\u{2060}'..='\u{2064}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// `text` on one line, control characters gone (bidirectional ones too, which would reorder
/// what is shown, and those that show nothing, which would hide words), cut at `max`
/// characters (with `…`).
#[must_use]
pub fn one_line(text: &str, max: usize) -> String {
    let one: String = text
        .chars()
        .filter(|c| !is_bidi(*c) && !is_invisible(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one = one.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let mut cut: String = one.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Whether 0xE2, `second`, `third` encode a bidirectional control.
fn bidi_after_e2(second: u8, third: u8) -> bool {
    match second {
        0x80 => matches!(third, 0x8E | 0x8F | 0xAA..=0xAE),
        0x81 => matches!(third, 0xA6..=0xA9),
        _ => false,
    }
}

/// The bytes a state holds back until the next byte says what they are.
fn held(state: State) -> Vec<u8> {
    match state {
        State::C2 => vec![0xC2],
        State::E2 => vec![0xE2],
        State::E2Then(b) => vec![0xE2, b],
        State::D8 => vec![0xD8],
        _ => Vec::new(),
    }
}

/// A filter for text on its way to a terminal, fed in pieces.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    state: State,
}

impl Filter {
    /// The printable bytes of `input`, given what came before it.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.state = step(self.state, b, out);
        }
    }
}

/// One byte through the machine: the next state; what is printed goes to `out`.
fn step(state: State, b: u8, out: &mut Vec<u8>) -> State {
    match state {
        State::Ground => ground(b, out),
        State::C2 => match b {
            0x9B => State::Csi,
            0x90 | 0x98 | 0x9D | 0x9E | 0x9F => State::Str,
            0x80..=0x9F => State::Ground,
            _ => {
                out.push(0xC2);
                ground(b, out)
            }
        },
        State::Esc => match b {
            b'[' => State::Csi,
            b']' | b'P' | b'X' | b'^' | b'_' => State::Str,
            0x1B => State::Esc,
            0x20..=0x2F => State::EscIntermediate,
            0x30..=0x7E => State::Ground,
            _ => ground(b, out),
        },
        State::EscIntermediate => match b {
            0x20..=0x2F => State::EscIntermediate,
            0x30..=0x7E => State::Ground,
            _ => ground(b, out),
        },
        State::Csi => match b {
            0x20..=0x3F => State::Csi,
            0x40..=0x7E => State::Ground,
            _ => ground(b, out),
        },
        State::Str => match b {
            0x07 => State::Ground,
            0x1B => State::StrEsc,
            0xC2 => State::StrC2,
            // An unended string ends with its line: what follows stays visible.
            b'\n' => ground(b, out),
            _ => State::Str,
        },
        State::StrEsc => match b {
            b'\\' => State::Ground,
            _ => step(State::Esc, b, out),
        },
        State::StrC2 => match b {
            0x9C => State::Ground,
            _ => step(State::Str, b, out),
        },
        State::E2 if matches!(b, 0x80 | 0x81) => State::E2Then(b),
        State::E2Then(second) if bidi_after_e2(second, b) => State::Ground,
        State::D8 if b == 0x9C => State::Ground,
        State::E2 | State::E2Then(_) | State::D8 => {
            out.extend(held(state));
            ground(b, out)
        }
    }
}

/// A byte of text: printed, dropped, or the start of a sequence.
fn ground(b: u8, out: &mut Vec<u8>) -> State {
    match b {
        0x1B => State::Esc,
        0xC2 => State::C2,
        0xE2 => State::E2,
        0xD8 => State::D8,
        b'\n' | b'\t' => {
            out.push(b);
            State::Ground
        }
        0x00..=0x1F | 0x7F => State::Ground,
        _ => {
            out.push(b);
            State::Ground
        }
    }
}

/// `text` with its control sequences removed (decoded lossily).
#[must_use]
pub fn printable(text: &str) -> String {
    printable_bytes(text.as_bytes())
}

/// `bytes` with their control sequences removed, as text (decoded lossily).
#[must_use]
pub fn printable_bytes(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut f = Filter::default();
    f.feed(bytes, &mut out);
    out.extend(held(f.state));
    String::from_utf8_lossy(&out).into_owned()
}

/// A JSON line with the C1 controls its strings may hold written as `\u0080`…`\u009f` (JSON
/// writers escape C0 controls, ESC among them, but leave C1's 8-bit CSI and OSC raw).
#[must_use]
pub fn json_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if ('\u{80}'..='\u{9f}').contains(&c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A writer that filters what goes through it (`logs`: a log copied in chunks).
pub struct Printable<W: Write> {
    inner: W,
    filter: Filter,
    buf: Vec<u8>,
}

impl<W: Write> Printable<W> {
    /// Filter what is written to `inner`.
    pub fn new(inner: W) -> Printable<W> {
        Printable {
            inner,
            filter: Filter::default(),
            buf: Vec::new(),
        }
    }
}

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, input: &[u8]) -> std::io::Result<usize> {
        self.buf.clear();
        self.filter.feed(input, &mut self.buf);
        self.inner.write_all(&self.buf)?;
        Ok(input.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_removed_and_text_is_kept() {
        let cases = [
            (
                "plain text, tabs\tand\nlines",
                "plain text, tabs\tand\nlines",
            ),
            ("é → ✓ \u{a0}", "é → ✓ \u{a0}"),
            // OSC 0 (title) and OSC 52 (clipboard), ended by BEL and by ST.
            ("a\x1b]0;pwned\x07b", "ab"),
            ("a\x1b]52;c;cm0gLXJmIH4=\x1b\\b", "ab"),
            // CSI: colour, cursor moves, erase, a private mode.
            ("\x1b[31mred\x1b[0m", "red"),
            ("x\x1b[2J\x1b[1;1Hy\x1b[?1049h", "xy"),
            // 8-bit CSI and OSC (C1, as UTF-8), and ST.
            ("a\u{9b}31mb", "ab"),
            ("a\u{9d}0;t\u{9c}b", "ab"),
            ("a\u{85}b", "ab"),
            // DCS, APC, two-byte escapes, a charset switch.
            ("a\x1bPq#0\x1b\\b\x1b_x\x1b\\c", "abc"),
            ("a\x1bcb\x1b(Bc\x1b7d", "abcd"),
            // Other controls: carriage return, backspace, bell, NUL, DEL.
            ("ok\rEVIL\x08\x07\x00\x7f!", "okEVIL!"),
            // An unended OSC hides only the rest of its line.
            ("a\x1b]0;title\nnext", "a\nnext"),
            // A CSI broken by text: the text stays, without the ESC.
            ("a\x1b[12é", "aé"),
        ];
        for (input, want) in cases {
            assert_eq!(printable(input), want, "{input:?}");
        }
    }

    #[test]
    fn bidirectional_controls_are_removed_and_their_neighbours_kept() {
        let cases = [
            // An override that shows `exe.txt` for `txt.exe`, and an isolate around a command.
            ("see \u{202E}txt.exe", "see txt.exe"),
            ("run \u{2066}rm -rf ~\u{2069} now", "run rm -rf ~ now"),
            ("\u{202A}a\u{202B}b\u{202C}c\u{202D}d", "abcd"),
            ("\u{2067}x\u{2068}y", "xy"),
            ("l\u{200E}r\u{200F}a\u{061C}b", "lrab"),
            // Their neighbours in UTF-8 stay: a dash, a bullet, a quote, an Arabic letter.
            (
                "a\u{2013}b \u{2022} \u{201C}q\u{201D} \u{2060}\u{206A}",
                "a\u{2013}b \u{2022} \u{201C}q\u{201D} \u{2060}\u{206A}",
            ),
            (
                "\u{200D}\u{2010} \u{0628}\u{061B}\u{061D}",
                "\u{200D}\u{2010} \u{0628}\u{061B}\u{061D}",
            ),
            // A lead byte left at the end, or broken by a control, stays as the bytes were.
            ("a\u{202E}\x1b[0mb", "ab"),
        ];
        for (input, want) in cases {
            assert_eq!(printable(input), want, "{input:?}");
        }
        for c in [
            '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
        ] {
            assert!(is_bidi(c), "{c:?}");
            assert_eq!(printable(&format!("<{c}>")), "<>", "{c:?}");
        }
        for c in [
            '\u{2029}', '\u{202F}', '\u{2065}', '\u{206A}', '\u{200D}', '\u{061B}', 'é',
        ] {
            assert!(!is_bidi(c), "{c:?}");
            assert_eq!(printable(&format!("<{c}>")), format!("<{c}>"), "{c:?}");
        }
        assert_eq!(printable_bytes(b"a\xe2\x80"), "a\u{fffd}");
    }

    #[test]
    fn a_stream_cut_anywhere_is_filtered_as_a_whole() {
        let text =
            "one\x1b]52;c;eHl6\x07two\u{9b}1mthree\x1b[0mfour é\u{202E}\u{2014}\u{0628}\u{061C}\n";
        let whole = printable(text);
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let mut w = Printable::new(Vec::new());
            w.write_all(&bytes[..cut]).unwrap();
            w.write_all(&bytes[cut..]).unwrap();
            assert_eq!(String::from_utf8_lossy(&w.inner), whole, "cut at {cut}");
        }
        assert_eq!(whole, "onetwothreefour é\u{2014}\u{0628}\n");
    }

    #[test]
    fn json_lines_carry_c1_controls_escaped() {
        let line = serde_json::to_string("a\x1b]0;t\x07b\u{9b}2J").unwrap();
        let safe = json_line(&line);
        assert!(
            !safe.contains('\u{1b}') && !safe.contains('\u{9b}'),
            "{safe}"
        );
        let back: String = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, "a\x1b]0;t\x07b\u{9b}2J");
    }
}
