//! Keeping the machine from idle sleep while an agent runs (`[defaults] keep_awake`). On Linux,
//! logind's `Inhibit("idle:sleep", …, "block")` over the system bus (`DBUS_SYSTEM_BUS_ADDRESS`
//! names another): the inhibitor lasts as long as the descriptor it returns is open, so a
//! [`Hold`] is that descriptor and dropping it lets the machine sleep again. On macOS,
//! `caffeinate -i -w <pid>`, ended when the hold is dropped (and by itself when we exit).

use std::time::Duration;

/// What inhibits sleep here, as the start line and `doctor` say it.
pub const HOW: &str = if cfg!(target_os = "macos") {
    "caffeinate"
} else {
    "logind"
};

/// How long asking may take: a bus that does not answer must not hold up an agent run.
const ASK_WITHIN: Duration = Duration::from_secs(5);

/// Sleep inhibited until this is dropped.
#[derive(Debug)]
pub struct Hold {
    #[cfg(target_os = "linux")]
    _fd: zbus::zvariant::OwnedFd,
    #[cfg(target_os = "macos")]
    child: std::process::Child,
}

#[cfg(target_os = "macos")]
impl Drop for Hold {
    fn drop(&mut self) {
        let _gone = self.child.kill();
        let _reaped = self.child.wait();
    }
}

/// Inhibit idle sleep for `why`; the reason nothing can, in words, when nothing can.
pub async fn inhibit(why: &str) -> Result<Hold, String> {
    match tokio::time::timeout(ASK_WITHIN, ask(why)).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "{HOW} did not answer within {}s",
            ASK_WITHIN.as_secs()
        )),
    }
}

#[cfg(target_os = "linux")]
async fn ask(why: &str) -> Result<Hold, String> {
    let conn = zbus::Connection::system()
        .await
        .map_err(|e| format!("no system bus ({e})"))?;
    let reply = conn
        .call_method(
            Some("org.freedesktop.login1"),
            "/org/freedesktop/login1",
            Some("org.freedesktop.login1.Manager"),
            "Inhibit",
            &("idle:sleep", "studio-agents", why, "block"),
        )
        .await
        .map_err(|e| match e {
            zbus::Error::MethodError(name, _, _)
                if name.as_str() == "org.freedesktop.DBus.Error.ServiceUnknown" =>
            {
                "logind is not on the system bus".to_string()
            }
            zbus::Error::MethodError(name, text, _) => {
                format!(
                    "logind refused ({}{})",
                    name.as_str(),
                    text.map(|t| format!(": {t}")).unwrap_or_default()
                )
            }
            e => format!("logind could not be asked ({e})"),
        })?;
    let fd: zbus::zvariant::OwnedFd = reply
        .body()
        .deserialize()
        .map_err(|e| format!("logind answered no descriptor ({e})"))?;
    // Received without close-on-exec: an agent started while it is held would inherit it (and
    // hold the machine awake past its run). Ours alone.
    {
        use std::os::fd::AsFd;
        rustix::io::fcntl_setfd(fd.as_fd(), rustix::io::FdFlags::CLOEXEC)
            .map_err(|e| format!("logind's descriptor: {e}"))?;
    }
    Ok(Hold { _fd: fd })
}

#[cfg(target_os = "macos")]
async fn ask(_why: &str) -> Result<Hold, String> {
    let pid = std::process::id().to_string();
    let child = std::process::Command::new("/usr/bin/caffeinate")
        .args(["-i", "-w", pid.as_str()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run caffeinate ({e})"))?;
    Ok(Hold { child })
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
async fn ask(_why: &str) -> Result<Hold, String> {
    Err("nothing inhibits sleep on this system".to_string())
}

/// A loop's keeping awake: a hold per agent run, and a failure said once, not per run.
#[derive(Debug, Default)]
pub struct Awake {
    enabled: bool,
    said: bool,
}

impl Awake {
    /// Keeping awake as `[defaults] keep_awake` says.
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            said: false,
        }
    }

    /// Inhibit sleep while the run `why` lasts; None when off or when nothing can (said in the
    /// loop's log the first time).
    pub async fn hold(&mut self, why: &str) -> Option<Hold> {
        if !self.enabled {
            return None;
        }
        match inhibit(why).await {
            Ok(h) => Some(h),
            Err(e) => {
                if !self.said {
                    self.said = true;
                    // The start line said it already; the log keeps it.
                    tracing::info!("keep awake: {e}; the machine may sleep while agents run");
                }
                None
            }
        }
    }
}

/// Whether sleep can be inhibited here, asked now and let go at once (for `doctor` and the
/// start line). Runs on a thread of its own, so it may be called from inside a runtime.
pub fn probe() -> Result<(), String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = super::runtime::runtime().map_err(|e| e.to_string())?;
            rt.block_on(inhibit("checking that sleep can be held off"))
                .map(drop)
        })
        .join()
        .unwrap_or_else(|_| Err("the check failed".to_string()))
    })
}

/// The start line's words about keeping awake.
#[must_use]
pub fn line(enabled: bool, probed: &Result<(), String>) -> String {
    match (enabled, probed) {
        (false, _) => "awake: off ([defaults] keep_awake = false): the machine may sleep".into(),
        (true, Ok(())) => format!("awake: idle sleep held off by {HOW} while an agent runs"),
        (true, Err(e)) => format!("awake: nothing holds off idle sleep: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_whether_it_holds() {
        assert_eq!(
            line(false, &Ok(())),
            "awake: off ([defaults] keep_awake = false): the machine may sleep"
        );
        assert_eq!(
            line(true, &Ok(())),
            format!("awake: idle sleep held off by {HOW} while an agent runs")
        );
        assert_eq!(
            line(true, &Err("no system bus (x)".into())),
            "awake: nothing holds off idle sleep: no system bus (x)"
        );
    }
}
