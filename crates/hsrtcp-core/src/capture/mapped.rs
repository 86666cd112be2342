//! A capture file read through a memory map instead of `read()`: the decoder reads the page
//! cache in place, without the kernel's copy of every byte into a buffer (the reader's
//! largest cost, docs/engine.md "Cost").
//!
//! A file truncated while mapped would raise SIGBUS on the next access to a page past its
//! new end, a crash where `read()` ends with an error. A process-wide SIGBUS handler
//! ([`guard`]) therefore puts a zero page where such a fault hit inside a registered map and
//! marks that map, and the reader turns the mark into an error ([`Mapped::truncated`]).
//! Faults outside the maps go to the handler installed before (or the default action).
//!
//! Memory stays flat: the pages behind the reader are dropped from the map every
//! [`RELEASE`] bytes (they stay in the page cache; only this process's mapping of them goes).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// Bytes read between two releases of the pages behind the reader.
pub const RELEASE: usize = 2 << 20;
/// Maps open at once (one per capture being read); a file beyond them is read with `read()`.
const SLOTS: usize = 64;

/// A read-only map of a whole regular file.
pub struct Mapped {
    ptr: *mut u8,
    len: usize,
    slot: &'static Slot,
    /// Bytes at the start of the map already released.
    released: usize,
}

// The map is read-only and owned by one reader; the slot is only touched through atomics.
unsafe impl Send for Mapped {}

impl Mapped {
    /// Map `file` if it is a non-empty regular file and a slot is free; otherwise None (the
    /// caller reads it with `read()`).
    pub fn new(file: &File) -> Option<Mapped> {
        let meta = file.metadata().ok()?;
        let len = usize::try_from(meta.len()).ok()?;
        if !meta.file_type().is_file() || len == 0 {
            return None;
        }
        if !guard() {
            return None; // no handler, no map: a cut file would crash the process
        }
        let slot = SLOT_TABLE.iter().find(|s| s.start.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed).is_ok())?;
        // SAFETY: a fresh read-only private mapping of an open file; nothing aliases it.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0)
        };
        if ptr == libc::MAP_FAILED {
            slot.start.store(0, Ordering::Release);
            return None;
        }
        // SAFETY: the range was just mapped.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        slot.hit.store(false, Ordering::Relaxed);
        slot.end.store(ptr as usize + len, Ordering::Release);
        slot.start.store(ptr as usize, Ordering::Release);
        Some(Mapped { ptr: ptr.cast(), len, slot, released: 0 })
    }

    /// Whether a page of the map was found missing (the file shrank): its bytes read as zeros.
    #[inline(always)]
    pub fn truncated(&self) -> bool {
        // The handler runs in this thread, inside the read of the lost page: the fence keeps
        // the compiler from moving this load before that read.
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        self.slot.hit.load(Ordering::Relaxed)
    }

    /// Drop the whole pages below byte `upto` from the map once [`RELEASE`] bytes have
    /// gone by (reading them again faults them back in: nothing is lost).
    #[inline(always)]
    pub fn release_below(&mut self, upto: usize) {
        if upto >= self.released + RELEASE {
            self.release(upto);
        }
    }

    #[cold]
    fn release(&mut self, upto: usize) {
        let end = upto & !(page_size() - 1);
        // SAFETY: a page-aligned range inside the map; it is only read again through `self`.
        unsafe { libc::madvise(self.ptr.add(self.released).cast(), end - self.released, libc::MADV_DONTNEED) };
        self.released = end;
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    #[inline(always)]
    fn deref(&self) -> &[u8] {
        // SAFETY: the map covers `len` readable bytes for the life of `self` (a page lost to
        // truncation reads as zeros, see the module's documentation).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmapping the range `new` mapped; no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
        self.slot.end.store(0, Ordering::Release);
        self.slot.start.store(0, Ordering::Release);
    }
}

/// A registered map: [start, end) and whether a SIGBUS hit it. `start` 1 = being set up.
struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    hit: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot { start: AtomicUsize::new(0), end: AtomicUsize::new(0), hit: AtomicBool::new(false) };
static SLOT_TABLE: [Slot; SLOTS] = [FREE; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(0);
/// The SIGBUS disposition before ours, for faults that are not in a map.
static mut PREVIOUS: Option<libc::sigaction> = None;

fn page_size() -> usize {
    PAGE.load(Ordering::Relaxed)
}

/// Install the SIGBUS handler, once per process; whether it is installed.
fn guard() -> bool {
    static ONCE: Once = Once::new();
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    ONCE.call_once(|| {
        // SAFETY: sysconf and sigaction with valid arguments; PREVIOUS is written here,
        // before the handler can run, and only read by it afterwards.
        unsafe {
            PAGE.store(libc::sysconf(libc::_SC_PAGESIZE) as usize, Ordering::Relaxed);
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &act, &mut old) == 0 {
                PREVIOUS = Some(old);
                INSTALLED.store(true, Ordering::Release);
            }
        }
    });
    INSTALLED.load(Ordering::Acquire)
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    for s in SLOT_TABLE.iter() {
        let (start, end) = (s.start.load(Ordering::Acquire), s.end.load(Ordering::Acquire));
        if start > 1 && start <= addr && addr < end {
            let page = addr & !(page_size() - 1);
            // SAFETY: replaces one page inside a live map of ours with a zero page (mmap
            // is a plain system call, safe in a handler); the faulting read then retries.
            let r = unsafe {
                libc::mmap(
                    page as *mut libc::c_void,
                    page_size(),
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if r != libc::MAP_FAILED {
                s.hit.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
    // Not ours: what would have happened without this handler.
    // SAFETY: PREVIOUS was set before the handler was installed; the calls follow the
    // previous disposition's own convention.
    unsafe {
        let prev = (*std::ptr::addr_of!(PREVIOUS)).unwrap_or_else(|| std::mem::zeroed());
        let h = prev.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            // The default action once the faulting access runs again.
            libc::sigaction(libc::SIGBUS, &prev, std::ptr::null_mut());
        } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(h);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
            f(sig);
        }
    }
}
