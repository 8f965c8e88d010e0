//! The reduced step allocates nothing (the haptic thread's rule): a counting global
//! allocator sees zero allocations over many steps, after construction.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use haptics::dynamics::{ReducedNewmark, ReducedParams, StepEvent};
use haptics::reduction::evaluator::ReducedForces;
use haptics::reduction::vega::read_cub;

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn reduced_newmark_step_allocates_nothing() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/models/vega-realtime-bridge/simpleBridge.cub");
    let cub = read_cub(&path).unwrap();
    let r = cub.r;
    for newton in [1usize, 3] {
        let params = ReducedParams {
            damping_stiffness: 0.01,
            newton_iterations: newton,
            ..ReducedParams::default()
        };
        let mut sim = ReducedNewmark::new(ReducedForces::new(&cub, r).unwrap(), params);
        let mut f = vec![0.0; r];
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        for s in 0..500 {
            f[0] = if s < 50 { 1000.0 } else { 0.0 };
            assert_eq!(sim.step(&f), StepEvent::Ok);
        }
        let after = ALLOCATIONS.load(Ordering::SeqCst);
        assert_eq!(
            after - before,
            0,
            "{} allocations in 500 steps ({newton} Newton iterations)",
            after - before
        );
    }
}
