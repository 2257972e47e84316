//! The panic handler and allocator of the `no_std` wasm build (the npm package).
//!
//! Linking `std` into the package would bring its panic machinery and `core::fmt` with it, several
//! times the size of the breaker itself. Without `std` the crate must name a panic handler and an
//! allocator. Nothing in the boundary panics on any input; the handler is a last resort that traps.
//!
//! The allocator hands out power-of-two blocks (16 bytes to 2 GiB) from the end of linear memory
//! and keeps one free list per size, so memory freed by a dropped breaker or a parsed header is
//! reused by the next allocation of the same size. wasm32 without atomics is single-threaded.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::null_mut;

const MIN_SHIFT: u32 = 4;
const CLASSES: usize = 28;
const PAGE: usize = 65_536;

struct Heap {
    free: [*mut u8; CLASSES],
    next: usize,
    end: usize,
}

/// The allocator.
pub struct SizeClassAlloc(UnsafeCell<Heap>);

// SAFETY: wasm32-unknown-unknown without the atomics feature has exactly one thread.
unsafe impl Sync for SizeClassAlloc {}

impl SizeClassAlloc {
    /// An empty heap; it starts at the end of the memory the module was instantiated with.
    pub const fn new() -> Self {
        SizeClassAlloc(UnsafeCell::new(Heap {
            free: [null_mut(); CLASSES],
            next: 0,
            end: 0,
        }))
    }
}

/// The size class of `layout` and its block size.
fn class(layout: Layout) -> Option<(usize, usize)> {
    let size = layout
        .size()
        .max(layout.align())
        .max(1 << MIN_SHIFT)
        .checked_next_power_of_two()?;
    let idx = (size.trailing_zeros() - MIN_SHIFT) as usize;
    (idx < CLASSES).then_some((idx, size))
}

impl Heap {
    fn bump(&mut self, size: usize) -> *mut u8 {
        // Blocks are aligned to their size (up to a page), so any alignment up to the size holds.
        let align = size.min(PAGE);
        for _ in 0..2 {
            let start = match self.next.checked_add(align - 1) {
                Some(s) => s & !(align - 1),
                None => return null_mut(),
            };
            let Some(new_next) = start.checked_add(size) else {
                return null_mut();
            };
            if new_next <= self.end {
                self.next = new_next;
                return start as *mut u8;
            }
            let pages = (new_next - self.end).div_ceil(PAGE).max(1);
            let prev = core::arch::wasm32::memory_grow(0, pages);
            if prev == usize::MAX {
                return null_mut();
            }
            let prev_end = prev * PAGE;
            if prev_end != self.end {
                // First use (or memory grown by someone else): start over at the old end.
                self.next = prev_end;
            }
            self.end = prev_end + pages * PAGE;
        }
        null_mut()
    }
}

unsafe impl GlobalAlloc for SizeClassAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some((idx, size)) = class(layout) else {
            return null_mut();
        };
        // SAFETY: single-threaded, and no reference into the heap outlives this call.
        let heap = unsafe { &mut *self.0.get() };
        let Some(slot) = heap.free.get_mut(idx) else {
            return null_mut();
        };
        let head = *slot;
        if !head.is_null() {
            // SAFETY: a free block stores the next free block of its class in its first word.
            *slot = unsafe { *(head as *mut *mut u8) };
            return head;
        }
        heap.bump(size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some((idx, _)) = class(layout) else {
            return;
        };
        // SAFETY: as in `alloc`.
        let heap = unsafe { &mut *self.0.get() };
        if let Some(slot) = heap.free.get_mut(idx) {
            // SAFETY: the block is at least 16 bytes and ours again.
            unsafe { *(ptr as *mut *mut u8) = *slot };
            *slot = ptr;
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return null_mut();
        };
        if class(layout).map(|c| c.0) == class(new_layout).map(|c| c.0) {
            return ptr;
        }
        // SAFETY: the caller's contract of `realloc`, forwarded.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

#[global_allocator]
static ALLOC: SizeClassAlloc = SizeClassAlloc::new();

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}
