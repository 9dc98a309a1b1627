//! A private D-Bus bus (`dbus-daemon`, from the `dbus` package) with a logind stand-in on it:
//! it owns `org.freedesktop.login1`, answers `Manager.Inhibit` with the write end of a pipe,
//! and records each call and when its descriptor was closed (the read end sees end-of-file
//! once every copy is closed, as logind's own FIFO does).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One `Inhibit` call.
#[derive(Debug, Clone)]
pub struct Call {
    /// `what`, `who`, `why`, `mode`.
    pub args: [String; 4],
    /// Whether the descriptor handed out is closed by now.
    pub closed: bool,
}

type Calls = Arc<Mutex<Vec<Call>>>;

struct Manager {
    calls: Calls,
}

#[zbus::interface(name = "org.freedesktop.login1.Manager")]
impl Manager {
    fn inhibit(
        &self,
        what: String,
        who: String,
        why: String,
        mode: String,
    ) -> zbus::fdo::Result<zbus::zvariant::OwnedFd> {
        let (mut read, write) =
            std::io::pipe().map_err(|e| zbus::fdo::Error::Failed(e.to_string()))?;
        let calls = Arc::clone(&self.calls);
        let n = {
            let mut c = calls.lock().unwrap();
            c.push(Call {
                args: [what, who, why, mode],
                closed: false,
            });
            c.len() - 1
        };
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _eof = read.read_to_end(&mut sink);
            calls.lock().unwrap()[n].closed = true;
        });
        Ok(std::os::fd::OwnedFd::from(write).into())
    }
}

/// The bus and the stand-in; both end when this is dropped.
pub struct Logind {
    /// The bus's address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    pub address: String,
    daemon: Child,
    calls: Calls,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Logind {
    /// Start a bus in `dir` and the stand-in on it. Fails the test, saying what to install,
    /// where `dbus-daemon` is missing.
    pub fn start(dir: &Path, token: &str) -> Logind {
        std::fs::create_dir_all(dir).unwrap();
        let socket = dir.join("bus");
        let conf = dir.join("bus.conf");
        std::fs::write(&conf, config(&socket)).unwrap();
        let daemon = Command::new("dbus-daemon")
            .args(["--nofork", "--nopidfile", "--config-file"])
            .arg(&conf)
            .env("STUDIO_AGENTS_TEST_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("the keep-awake test needs dbus-daemon (apt-get install dbus): {e}")
            });
        let address = format!("unix:path={}", socket.display());
        super::wait_for("the private bus", Duration::from_secs(10), || {
            if socket.exists() {
                Ok(())
            } else {
                Err("no socket yet")
            }
        });
        let calls: Calls = Arc::default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let serve = Manager {
            calls: Arc::clone(&calls),
        };
        let addr = address.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let conn = zbus::connection::Builder::address(addr.as_str())
                    .and_then(|b| b.name("org.freedesktop.login1"))
                    .and_then(|b| b.serve_at("/org/freedesktop/login1", serve));
                let conn = match conn {
                    Ok(b) => b.build().await,
                    Err(e) => Err(e),
                };
                let _told = ready_tx.send(conn.as_ref().map(|_| ()).map_err(|e| e.to_string()));
                let _conn = conn;
                let _stopped = rx.await;
            });
        });
        ready_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the stand-in to join the bus")
            .expect("the stand-in to own org.freedesktop.login1");
        Logind {
            address,
            daemon,
            calls,
            stop: Some(tx),
        }
    }

    /// The calls so far.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl Drop for Logind {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _told = tx.send(());
        }
        let _gone = self.daemon.kill();
        let _reaped = self.daemon.wait();
    }
}

fn config(socket: &Path) -> String {
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"#,
        socket.display()
    )
}
