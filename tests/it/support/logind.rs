//! A system bus of the test's own with a logind stand-in on it, in one: it listens on a Unix
//! socket, answers each connection's `Hello` as a bus does (the client's side cannot tell), and
//! serves `org.freedesktop.login1.Manager.Inhibit` with the write end of a pipe, recording each
//! call and when its descriptor was closed (the read end sees end-of-file once every copy is
//! closed, as logind's own FIFO does). No `dbus-daemon` needed.

use std::io::Read;
use std::path::Path;
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

/// `org.freedesktop.DBus`, as much of it as a client's handshake asks.
struct Bus;

#[zbus::interface(name = "org.freedesktop.DBus")]
impl Bus {
    fn hello(&self) -> String {
        ":1.1".to_string()
    }
}

struct Manager {
    calls: Calls,
    /// Refuse every call, as logind's policy may.
    refuse: bool,
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
        let calls = Arc::clone(&self.calls);
        let n = {
            let mut c = calls.lock().unwrap();
            c.push(Call {
                args: [what, who, why, mode],
                closed: self.refuse,
            });
            c.len() - 1
        };
        if self.refuse {
            return Err(zbus::fdo::Error::AccessDenied("Permission denied".into()));
        }
        let (mut read, write) =
            std::io::pipe().map_err(|e| zbus::fdo::Error::Failed(e.to_string()))?;
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _eof = read.read_to_end(&mut sink);
            calls.lock().unwrap()[n].closed = true;
        });
        Ok(std::os::fd::OwnedFd::from(write).into())
    }
}

/// The bus and the stand-in; they end when this is dropped.
pub struct Logind {
    /// The bus's address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    pub address: String,
    calls: Calls,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Logind {
    /// Listen on a socket in `dir`.
    pub fn start(dir: &Path) -> Logind {
        Self::serve(dir, false)
    }

    /// [`Self::start`], refusing every `Inhibit`.
    pub fn refusing(dir: &Path) -> Logind {
        Self::serve(dir, true)
    }

    fn serve(dir: &Path, refuse: bool) -> Logind {
        std::fs::create_dir_all(dir).unwrap();
        let socket = dir.join("bus");
        let address = format!("unix:path={}", socket.display());
        let calls: Calls = Arc::default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let served = Arc::clone(&calls);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::UnixListener::bind(&socket).unwrap();
                let _told = ready_tx.send(());
                tokio::select! {
                    () = accept(listener, served, refuse) => {}
                    _stopped = rx => {}
                }
            });
        });
        ready_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the stand-in bus to listen");
        Logind {
            address,
            calls,
            stop: Some(tx),
        }
    }

    /// The calls so far.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

/// Serve every connection: the bus's side of it, with both objects on it.
async fn accept(listener: tokio::net::UnixListener, calls: Calls, refuse: bool) {
    let mut open = Vec::new();
    while let Ok((stream, _)) = listener.accept().await {
        let conn = zbus::connection::Builder::unix_stream(stream)
            .server(zbus::Guid::generate())
            .map(zbus::connection::Builder::p2p)
            .and_then(|b| b.serve_at("/org/freedesktop/DBus", Bus))
            .and_then(|b| {
                b.serve_at(
                    "/org/freedesktop/login1",
                    Manager {
                        calls: Arc::clone(&calls),
                        refuse,
                    },
                )
            });
        if let Ok(b) = conn {
            // Its handshake runs beside the next accept.
            open.push(tokio::spawn(b.build()));
        }
    }
}

impl Drop for Logind {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _told = tx.send(());
        }
    }
}
