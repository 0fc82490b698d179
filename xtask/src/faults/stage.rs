//! The stage of a fault run: small file systems that can be filled, a TCP relay that can
//! answer late, and the service's process, which can be killed and started again.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::cmd;

/// A tmpfs of a few MiB mounted for the run, so that a disk can be filled without filling
/// the machine's; unmounted when dropped.
pub struct SmallDisk {
    path: PathBuf,
    filler: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `mib` MiB at `path` (created). Needs root.
    pub fn mount(path: PathBuf, mib: u32) -> Result<Self> {
        fs::create_dir_all(&path)
            .with_context(|| format!("could not create {}", path.display()))?;
        let mut mount = Command::new("mount");
        mount.args(["-t", "tmpfs", "-o", &format!("size={mib}m,mode=0777"), "tmpfs"]).arg(&path);
        cmd::run_quiet(&mut mount).context(
            "could not mount a small tmpfs to fill (the disk faults need root: run as root)",
        )?;
        let filler = path.join("filler");
        Ok(Self { path, filler })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Fills what is left of it with one file, until the file system refuses.
    pub fn fill(&self) -> Result<()> {
        let mut file = File::create(&self.filler)
            .with_context(|| format!("could not create {}", self.filler.display()))?;
        let chunk = vec![0_u8; 1 << 20];
        loop {
            if let Err(err) = file.write_all(&chunk).and_then(|()| file.sync_data()) {
                if err.kind() == std::io::ErrorKind::StorageFull {
                    // The last few bytes too: a write of a page must fail.
                    let mut small = vec![0_u8; 4096];
                    while file.write_all(&small).is_ok() {}
                    small.truncate(1);
                    while file.write_all(&small).is_ok() {}
                    return Ok(());
                }
                return Err(err).context("could not fill the small disk");
            }
        }
    }

    /// Gives the space back.
    pub fn empty(&self) -> Result<()> {
        match fs::remove_file(&self.filler) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(err).context("could not remove the filler"),
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// A TCP relay on a free port of 127.0.0.1 to one upstream address, which can be told to
/// pass every chunk on late, in both directions, as a database behind a slow network does.
pub struct Relay {
    pub port: u16,
    delay_ms: Arc<AtomicU64>,
}

impl Relay {
    /// Relays to `upstream`, on the runtime of the caller.
    pub async fn to(upstream: u16) -> Result<Self> {
        let listener =
            TcpListener::bind("127.0.0.1:0").await.context("could not bind the relay")?;
        let port = listener.local_addr()?.port();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delay = Arc::clone(&delay_ms);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let delay = Arc::clone(&delay);
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::select! {
                        () = pass_on(client_read, server_write, Arc::clone(&delay)) => {}
                        () = pass_on(server_read, client_write, delay) => {}
                    }
                });
            }
        });
        Ok(Self { port, delay_ms })
    }

    /// Passes every chunk on `delay` after it arrived, from now on.
    pub fn set_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.delay_ms.store(ms, Ordering::Release);
    }
}

/// Copies what `from` reads to `to`, each chunk held until its time has come.
async fn pass_on(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay_ms: Arc<AtomicU64>,
) {
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at.into()).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
    };
    let reader = async move {
        let mut buffer = vec![0; 64 * 1024];
        while let Ok(read @ 1..) = from.read(&mut buffer).await {
            let delay = Duration::from_millis(delay_ms.load(Ordering::Acquire));
            if chunks.send((Instant::now() + delay, buffer[..read].to_vec())).is_err() {
                return;
            }
        }
    };
    tokio::join!(reader, writer);
}

/// How the service is started for a fault.
#[derive(Clone)]
pub struct Launch {
    pub binary: PathBuf,
    pub database_url: String,
    pub port: u16,
    pub dir: PathBuf,
    /// Flags beyond the database, the address and the ready file.
    pub flags: Vec<String>,
}

/// The service's process.
pub struct Service {
    launch: Launch,
    child: Option<Child>,
    started: u32,
}

impl Service {
    /// Starts the service and waits until it listens.
    pub fn start(launch: Launch) -> Result<Self> {
        let mut service = Self { launch, child: None, started: 0 };
        service.start_again(Duration::from_secs(30))?;
        Ok(service)
    }

    /// The service's address, `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.launch.port)
    }

    /// Starts the service (again) and waits until it listens, at most `limit`.
    pub fn start_again(&mut self, limit: Duration) -> Result<()> {
        self.started += 1;
        let ready = self.launch.dir.join(format!("ready-{}.json", self.started));
        let log = File::create(self.launch.dir.join(format!("server-{}.log", self.started)))?;
        let child = Command::new(&self.launch.binary)
            .env_clear()
            .env("RUST_LOG", "warn")
            .args(["--database-url", &self.launch.database_url])
            .args(["--bind", &format!("127.0.0.1:{}", self.launch.port)])
            .arg("--ready-file")
            .arg(&ready)
            .args(&self.launch.flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("could not start the service")?;
        self.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < limit {
            if ready.exists() {
                return Ok(());
            }
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                bail!("the service exited at start ({status}): {}", self.last_log_line());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        bail!("the service did not listen within {limit:?}")
    }

    /// Kills the service with SIGKILL, as `kill -9` does.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    fn last_log_line(&self) -> String {
        let log = self.launch.dir.join(format!("server-{}.log", self.started));
        fs::read_to_string(log)
            .ok()
            .and_then(|text| text.lines().last().map(str::to_owned))
            .unwrap_or_default()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            drop(crate::system::Process(child));
        }
    }
}
