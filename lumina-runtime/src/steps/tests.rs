//! Rule N4, counted: each operation runs `OPS` times on state of 1 000 and of 16 000, and its
//! steps per operation (comparisons, probes, elements visited or shifted: `steps::add`) may grow
//! at most 2x from the small size to the large one. A linear scan grows 16x, a binary search
//! 1.4x.

use std::rc::Rc;

use super::count;
use crate::{DelegateHandle, MulticastDelegate};

mod bus;

const SMALL: usize = 1_000;
const LARGE: usize = 16_000;
/// Operations measured per size (after the state is built, which is not counted).
const OPS: usize = 64;

type Delegate = MulticastDelegate<dyn Fn(u32)>;

/// Steps per operation at size `n`: `setup(n)` builds the state and returns the operation,
/// called with `0..OPS`.
fn per_op<F: FnMut(usize)>(n: usize, setup: &impl Fn(usize) -> F) -> f64 {
    let mut op = setup(n);
    let steps = count(|| (0..OPS).for_each(&mut op));
    steps as f64 / OPS as f64
}

/// Fails when `setup`'s operation costs more than 2x per operation at 16 000 than at 1 000 (plus
/// a few steps of slack, for operations that cost almost nothing).
#[track_caller]
fn assert_flat<F: FnMut(usize)>(name: &str, setup: impl Fn(usize) -> F) {
    let small = per_op(SMALL, &setup);
    let large = per_op(LARGE, &setup);
    println!("N4 {name}: {small:.1} steps per operation at {SMALL}, {large:.1} at {LARGE}");
    assert!(
        large <= 2.0 * small + 8.0,
        "N4: {name} grows from {small:.1} steps per operation at {SMALL} to {large:.1} at {LARGE}"
    );
}

fn plain(n: usize) -> (Delegate, Vec<DelegateHandle>) {
    let delegate = Delegate::new();
    let handles = (0..n).map(|_| delegate.add_lambda(|_| {})).collect();
    (delegate, handles)
}

struct Actor;
impl Actor {
    fn on(&self, _: u32) {}
    fn other(&self, _: u32) {}
}

/// `n` owners, each with one `add_method` binding; the owners are returned to be kept alive.
fn owned(n: usize) -> (Delegate, Vec<Rc<Actor>>) {
    let delegate = Delegate::new();
    let owners: Vec<Rc<Actor>> = (0..n).map(|_| Rc::new(Actor)).collect();
    for owner in &owners {
        let _ = delegate.add_method(owner, Actor::on);
    }
    (delegate, owners)
}

#[test]
fn n4_the_counter_sees_a_scan() {
    // The device works: an operation that walks by nature (`len`) is counted per entry.
    let (delegate, _owners) = owned(SMALL);
    let steps = count(|| assert_eq!(delegate.len(), SMALL));
    assert!(steps >= SMALL as u64, "{steps}");
}

#[test]
fn n4_add_and_remove_by_handle_at_one_priority() {
    assert_flat("add_lambda", |n| {
        let (delegate, _) = plain(n);
        move |_| {
            let _ = delegate.add_lambda(|_| {});
        }
    });
    assert_flat("remove by handle", |n| {
        let (delegate, handles) = plain(n);
        move |i| assert!(delegate.remove(handles[i * 7]))
    });
    assert_flat("block + unblock", |n| {
        let (delegate, handles) = plain(n);
        move |i| assert!(delegate.block(handles[i * 7]) && delegate.unblock(handles[i * 7]))
    });
}

/// By owner: O(k) in the owner's own subscriptions (rule N4), not a scan of the list.
#[test]
fn n4_by_owner_costs_the_owners_subscriptions() {
    assert_flat("remove_all(owner)", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert_eq!(delegate.remove_all(&owners[i * 7]), 1)
    });
    assert_flat("is_bound_to(owner)", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert!(delegate.is_bound_to(&owners[i * 7]))
    });
    assert_flat("is_bound_to(a stranger)", |n| {
        let (delegate, _owners) = owned(n);
        let stranger = Rc::new(Actor);
        move |_| assert!(!delegate.is_bound_to(&stranger))
    });
    assert_flat("remove_method", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert_eq!(delegate.remove_method(&owners[i * 7], Actor::on), 1)
    });
    assert_flat("remove_method of another method", |n| {
        let (delegate, owners) = owned(n);
        move |i| assert_eq!(delegate.remove_method(&owners[i * 7], Actor::other), 0)
    });
}

fn unknown(_: u32) {}
fn known(_: u32) {}

/// `remove_static` of a function with no subscription, and `is_bound` after removals: O(1).
#[test]
fn n4_remove_static_and_is_bound_look_nothing_up_in_the_list() {
    assert_flat("remove_static(unknown)", |n| {
        let delegate = Delegate::new();
        for _ in 0..n {
            let _ = delegate.add_static(known);
        }
        move |_| assert_eq!(delegate.remove_static(unknown), 0)
    });
    assert_flat("is_bound after half were removed", |n| {
        let (delegate, handles) = plain(n);
        for handle in &handles[..n / 2 - 1] {
            assert!(delegate.remove(*handle));
        }
        move |_| assert!(delegate.is_bound())
    });
}
