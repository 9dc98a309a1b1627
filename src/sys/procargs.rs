//! The layout of macOS's `KERN_PROCARGS2` answer, read without trusting it: a 32-bit argument
//! count, the executable's path, padding, the arguments, then the environment, each
//! NUL-terminated. Pure, and tested on every platform.

/// The arguments of a `KERN_PROCARGS2` buffer (the program's name first); nothing when the
/// buffer is not of that shape.
pub fn arguments(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let argc = argc(buf);
    let rest = buf.get(4..).unwrap_or_default();
    let parts: Vec<&[u8]> = rest
        .split(|b| *b == 0)
        .skip(1)
        .skip_while(|p| p.is_empty())
        .take(argc)
        .collect();
    let complete = parts.len() == argc;
    parts.into_iter().filter(move |_| complete)
}

fn argc(buf: &[u8]) -> usize {
    buf.get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, |b| usize::try_from(i32::from_ne_bytes(b)).unwrap_or(0))
}

/// The environment entries (`KEY=value`) of a `KERN_PROCARGS2` buffer; nothing when the buffer
/// is not of that shape.
pub fn environment(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let argc = argc(buf);
    let rest = buf.get(4..).unwrap_or_default();
    // The executable path, then the NULs that pad it.
    let mut parts = rest.split(|b| *b == 0).skip(1).skip_while(|p| p.is_empty());
    let mut args = 0;
    while args < argc && parts.next().is_some() {
        args += 1;
    }
    let complete = args == argc && buf.len() >= 4;
    parts
        .take_while(|p| !p.is_empty())
        .filter(move |_| complete)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(argv: &[&str], env: &[&str]) -> Vec<u8> {
        let mut b = i32::try_from(argv.len()).unwrap().to_ne_bytes().to_vec();
        b.extend_from_slice(b"/bin/sh\0\0\0\0");
        for a in argv.iter().chain(env) {
            b.extend_from_slice(a.as_bytes());
            b.push(0);
        }
        b.extend_from_slice(b"\0\0ptr_munge=\0");
        b
    }

    #[test]
    fn the_environment_follows_the_arguments() {
        let b = buffer(
            &["sh", "-c", "WIGGUM_TOKEN=fake"],
            &["HOME=/Users/me", "WIGGUM_TOKEN=t1"],
        );
        let args: Vec<&[u8]> = arguments(&b).collect();
        assert_eq!(args, [b"sh".as_slice(), b"-c", b"WIGGUM_TOKEN=fake"]);
        let env: Vec<&[u8]> = environment(&b).collect();
        assert_eq!(
            env,
            [b"HOME=/Users/me".as_slice(), b"WIGGUM_TOKEN=t1".as_slice()]
        );
    }

    #[test]
    fn a_short_or_garbled_buffer_has_no_environment() {
        assert_eq!(environment(b"").count(), 0);
        assert_eq!(arguments(b"").count(), 0);
        assert_eq!(environment(b"\x01\x00").count(), 0);
        let mut b = buffer(&["sh"], &["A=1"]);
        b[..4].copy_from_slice(&9i32.to_ne_bytes());
        assert_eq!(
            environment(&b).count(),
            0,
            "more arguments claimed than present"
        );
    }
}
