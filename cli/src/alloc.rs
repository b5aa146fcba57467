//! The `pond` binary's allocator: mimalloc for the verbs that convert and write, jemalloc for the
//! verbs that serve and search, chosen once at the start of `main`.
//!
//! Each was measured on its own work (docs/decisions.md, "Allocators"): a conversion spends
//! about a quarter of its time in malloc/free under the system allocator, and mimalloc takes
//! most of that back; searches through Lance's readers were slower and several times larger
//! under mimalloc (1M messages, warm: p95 80-82 against 49-53 ms, peak RSS 3.7-4.1 GiB against
//! 572 MiB; with its transparent huge pages off 1.2-1.3 GiB and p95 71-76 ms), which keeps the
//! pages Lance's many threads free. glibc's allocator held that memory down but, with 64
//! searches at once, its arenas' locks left the two cores partly idle: jemalloc answered 20-40%
//! more searches a second in the same minutes at about the same peak RSS (docs/benchmarks.md,
//! "HTTP load on `/v1/search`: the allocator"). A convert-only build (no `store` feature) has no
//! serving verb and keeps the system allocator as the never-chosen second.
//!
//! Blocks allocated before the switch (argument parsing) stay mimalloc's: once the switch is
//! made, every free asks mimalloc whether the block is its own (`mi_is_in_heap_region`, its
//! page map: what its own `free` reads) and hands it to the allocator that made it. Before it,
//! and so for the whole of a verb that never makes it (a conversion), every block is
//! mimalloc's and a free goes to mimalloc unasked: the question was 2-4% of a conversion's
//! instructions (docs/decisions.md, "Allocators").

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(not(feature = "store"))]
use std::alloc::System as Serving;
#[cfg(feature = "store")]
use tikv_jemallocator::Jemalloc as Serving;

/// Whether new blocks come from the serving verbs' allocator.
static SERVING: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    /// mimalloc.h (v3): whether `p` lies in memory mimalloc manages.
    fn mi_is_in_heap_region(p: *const std::ffi::c_void) -> bool;
    /// mimalloc.h: `size` bytes, uninitialized; `mi_zalloc` zeroed; `mi_realloc` resized in
    /// place or moved. Each block word-aligned (see [`WORD`]).
    fn mi_malloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_zalloc(size: usize) -> *mut std::ffi::c_void;
    fn mi_realloc(p: *mut std::ffi::c_void, newsize: usize) -> *mut std::ffi::c_void;
}

/// The alignment every mimalloc block has: its own aligned reallocation takes the plain path
/// at or below it (`mi_theap_realloc_zero_aligned_at`, alloc-aligned.c). The `mimalloc` crate
/// asks for every block through the aligned entry points, which check the alignment and the
/// free block's address before taking the same page a plain `mi_malloc` takes; nearly every
/// block a conversion makes (strings, vectors, boxes) asks for at most this, so those take the
/// plain entry points (docs/benchmarks.md, "2026-12-06, 00:10-01:36 UTC: the plain
/// allocation path").
const WORD: usize = std::mem::size_of::<usize>();

/// New blocks come from jemalloc from now on. Called by the serving and searching verbs first
/// thing, before any other thread exists (all of them need the store).
#[cfg(feature = "store")]
pub fn use_serving_allocator() {
    SERVING.store(true, Ordering::Relaxed);
}

/// mimalloc's, or the serving verbs' (see the module doc).
pub struct PondAlloc;

fn mimalloc_owns(ptr: *mut u8) -> bool {
    // SAFETY: a lookup in mimalloc's page map; valid for any address.
    unsafe { mi_is_in_heap_region(ptr.cast()) }
}

/// Whether the block `ptr` goes back to mimalloc. Until the switch to the serving allocator no
/// block of the other exists, and the switch is made before any other thread is started: every
/// thread that could hold one of its blocks sees the switch.
fn mimalloc_frees(ptr: *mut u8) -> bool {
    !SERVING.load(Ordering::Relaxed) || mimalloc_owns(ptr)
}

// SAFETY: every block is freed or resized by the allocator that made it (checked per block
// once the switch is made; before it every block is mimalloc's, `mimalloc_frees`), and each of
// the two upholds GlobalAlloc's contract itself: a mimalloc block of at most [`WORD`] alignment
// comes from the plain entry points, whose every block is word-aligned, and is resized by them
// (a block keeps its layout's alignment, so it is resized by the entry points that made it).
unsafe impl GlobalAlloc for PondAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        unsafe {
            if SERVING.load(Ordering::Relaxed) {
                Serving.alloc(layout)
            } else if layout.align() <= WORD {
                mi_malloc(layout.size()).cast()
            } else {
                mimalloc::MiMalloc.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        unsafe {
            if SERVING.load(Ordering::Relaxed) {
                Serving.alloc_zeroed(layout)
            } else if layout.align() <= WORD {
                mi_zalloc(layout.size()).cast()
            } else {
                mimalloc::MiMalloc.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` goes back to the allocator that made it.
        unsafe {
            if mimalloc_frees(ptr) {
                mimalloc::MiMalloc.dealloc(ptr, layout)
            } else {
                Serving.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: resized by the allocator that made it, which keeps it.
        unsafe {
            if mimalloc_frees(ptr) {
                if layout.align() <= WORD {
                    mi_realloc(ptr.cast(), new_size).cast()
                } else {
                    mimalloc::MiMalloc.realloc(ptr, layout, new_size)
                }
            } else {
                Serving.realloc(ptr, layout, new_size)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain entry points give word-aligned blocks of every size class a conversion asks
    /// for (what [`WORD`] relies on), keep a block's bytes when it grows or shrinks, and their
    /// blocks are mimalloc's to free.
    #[test]
    fn plain_mimalloc_blocks_are_word_aligned() {
        let sizes = (1..=160).chain([255, 1000, 1024, 1025, 4096, 70_000, 2 << 20]);
        for size in sizes {
            // SAFETY: each block is used within its size and freed once, by mimalloc.
            unsafe {
                let p = mi_malloc(size).cast::<u8>();
                let z = mi_zalloc(size).cast::<u8>();
                for (block, zeroed) in [(p, false), (z, true)] {
                    assert!(!block.is_null() && mimalloc_owns(block), "{size}");
                    assert_eq!(block as usize % WORD, 0, "size {size}, zeroed {zeroed}");
                }
                assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                p.write_bytes(5, size);
                let grown = mi_realloc(p.cast(), size * 3).cast::<u8>();
                assert_eq!(grown as usize % WORD, 0, "{size} grown");
                assert!(
                    std::slice::from_raw_parts(grown, size)
                        .iter()
                        .all(|&b| b == 5)
                );
                let shrunk = mi_realloc(grown.cast(), size.div_ceil(2)).cast::<u8>();
                assert_eq!(shrunk as usize % WORD, 0, "{size} shrunk");
                assert_eq!(*shrunk, 5);
                let layout = Layout::from_size_align(size.div_ceil(2), 1).unwrap();
                mimalloc::MiMalloc.dealloc(shrunk, layout);
                mimalloc::MiMalloc.dealloc(z, Layout::from_size_align(size, 1).unwrap());
            }
        }
    }

    /// Blocks of both allocators are freed and resized by their own, whichever is current:
    /// jemalloc would abort on a mimalloc block, and mimalloc on a jemalloc one.
    #[test]
    fn each_block_goes_back_to_the_allocator_that_made_it() {
        // Blocks of the serving allocator exist only after the switch (as in `pond serve`;
        // from here on this test process allocates from it, and frees ask whose a block is).
        SERVING.store(true, Ordering::Relaxed);
        let layouts = [
            Layout::from_size_align(24, 8).unwrap(),
            Layout::from_size_align(4096, 64).unwrap(),
            Layout::from_size_align(8 << 20, 16).unwrap(),
        ];
        for layout in layouts {
            // SAFETY: each block is used within its layout and freed once.
            unsafe {
                let mi = mimalloc::MiMalloc.alloc(layout);
                let sys = Serving.alloc(layout);
                assert!(mimalloc_owns(mi), "{layout:?}");
                assert!(!mimalloc_owns(sys), "{layout:?}");
                mi.write_bytes(7, layout.size());
                sys.write_bytes(9, layout.size());
                let mi = PondAlloc.realloc(mi, layout, layout.size() * 2);
                let sys = PondAlloc.realloc(sys, layout, layout.size() * 2);
                assert!(mimalloc_owns(mi) && !mimalloc_owns(sys));
                assert_eq!((*mi, *sys), (7, 9));
                let doubled = Layout::from_size_align(layout.size() * 2, layout.align()).unwrap();
                PondAlloc.dealloc(mi, doubled);
                PondAlloc.dealloc(sys, doubled);
            }
        }
    }
}
