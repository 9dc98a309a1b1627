//! `wait_for`: the one poller. Sleeps ~25 ms between tries; panics with what it waited for, how
//! long, and the last value seen. `TEST_TIME_FACTOR` scales every deadline on slow machines.

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// Scale a deadline by `TEST_TIME_FACTOR` (default 1).
pub fn scaled(d: Duration) -> Duration {
    let f: f64 = std::env::var("TEST_TIME_FACTOR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    d.mul_f64(f.max(1.0))
}

/// Poll `probe` until it returns `Some`, or panic after `deadline`.
#[track_caller]
pub fn wait_for<T, L: Debug>(
    what: &str,
    deadline: Duration,
    mut probe: impl FnMut() -> Result<T, L>,
) -> T {
    let deadline = scaled(deadline);
    let start = Instant::now();
    loop {
        match probe() {
            Ok(v) => return v,
            Err(last) => {
                if start.elapsed() >= deadline {
                    panic!(
                        "timed out after {:?} waiting for {what}; last seen: {last:?}",
                        start.elapsed()
                    );
                }
            }
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The lines of `from`, read beside the test (a read never holds up a test's deadline), and
/// the lines seen so far.
pub struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
    /// Every line received so far.
    pub seen: Vec<String>,
}

impl Lines {
    /// Read `from` line by line in a thread of its own.
    pub fn beside(from: impl std::io::Read + Send + 'static) -> Lines {
        use std::io::BufRead;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(from).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Wait (with [`wait_for`]) until a line holding `text` has come.
    #[track_caller]
    pub fn wait_for_line(&mut self, what: &str, text: &str, deadline: Duration) {
        wait_for(what, deadline, || {
            self.seen.extend(self.rx.try_iter());
            if self.seen.iter().any(|l| l.contains(text)) {
                Ok(())
            } else {
                Err(self.seen.join("\n"))
            }
        });
    }

    /// Every line, once the source has ended.
    pub fn rest(mut self) -> Vec<String> {
        self.seen.extend(self.rx.iter());
        self.seen
    }
}
