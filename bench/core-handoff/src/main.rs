//! Prints the nanoseconds one cache line takes to pass from one CPU to another, measured by two
//! threads pinned to CPUs `A` and `B` (default 0 and 1) handing a counter back and forth: the
//! median over chunks of 1,000 round trips.
//!
//!     core-handoff [ROUNDS] [A B]          # ROUNDS round trips, default 1,000,000
//!
//! On a virtual machine this is where the host placed the two virtual CPUs: close (a shared
//! cache, tens of nanoseconds) or far apart (several times that). A conversion on two threads
//! passes messages and their memory between them, so it runs slower while they are far apart,
//! and a program on one thread does not notice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Tells the other thread to stop waiting: this one could not run where it was asked to.
const STOP: u64 = u64::MAX;

/// Round trips timed together.
const CHUNK: u64 = 1_000;

/// The counter on a cache line of its own.
#[repr(align(128))]
struct Line(AtomicU64);

fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it for cpu below
    // CPU_SETSIZE, which is checked; sched_setaffinity(0, ...) applies to the calling thread.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(format!("CPU {cpu} is beyond the kernel's set size"));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "cannot run on CPU {cpu}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| match args.get(i) {
        None => default,
        Some(text) => text.parse().unwrap_or_else(|_| {
            eprintln!("core-handoff: argument {} is not a number: {text:?}", i + 1);
            std::process::exit(2)
        }),
    };
    let rounds = number(0, 1_000_000).max(1);
    let (a, b) = (number(1, 0) as usize, number(2, 1) as usize);
    let line = &Line(AtomicU64::new(0));
    let timed = std::thread::scope(|scope| {
        let (pinned, told) = std::sync::mpsc::channel();
        let other = scope.spawn(move || {
            let result = pin(b);
            let fine = result.is_ok();
            pinned
                .send(result)
                .expect("the first thread waits for this");
            if !fine {
                return;
            }
            for i in 0..rounds {
                loop {
                    match line.0.load(Ordering::Acquire) {
                        STOP => return,
                        v if v == 2 * i + 1 => break,
                        _ => std::hint::spin_loop(),
                    }
                }
                line.0.store(2 * i + 2, Ordering::Release);
            }
        });
        let result = told
            .recv()
            .expect("the other thread says whether it runs")
            .and(pin(a));
        if let Err(e) = result {
            line.0.store(STOP, Ordering::Release);
            return Err(e);
        }
        // Timed in chunks, and the median chunk taken: a thread of the pair descheduled for a
        // moment (the kernel, another process) slows a few chunks, the CPUs' placement all.
        let mut chunks = Vec::with_capacity(rounds.div_ceil(CHUNK) as usize);
        let mut start = Instant::now();
        for i in 0..rounds {
            line.0.store(2 * i + 1, Ordering::Release);
            while line.0.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
            if (i + 1) % CHUNK == 0 || i + 1 == rounds {
                let done = Instant::now();
                let trips = (i % CHUNK + 1) as f64;
                chunks.push((done - start).as_nanos() as f64 / (2.0 * trips));
                start = done;
            }
        }
        other.join().expect("the other thread does not panic");
        Ok(chunks)
    });
    let mut chunks = timed.unwrap_or_else(|e| {
        eprintln!("core-handoff: {e}");
        std::process::exit(1)
    });
    chunks.sort_by(f64::total_cmp);
    println!("{:.1}", chunks[chunks.len() / 2]);
}
