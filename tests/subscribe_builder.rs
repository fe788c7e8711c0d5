//! Rule A1: one builder shape for a subscription with options. Every meaningful combination of
//! the options (priority, one-shot, self-aware, muted) with every finish (lambda, static,
//! member, shared, shared member, method) is made on every mechanism the builder covers (the
//! generic delegate, its registration view, a declared delegate and its view, a lifecycle
//! signal), and its behaviour is checked
//! against what the options say: where it runs among the others, how often, whether it receives
//! its own subscription, whether it runs at all while muted, and that `remove_static` /
//! `remove_method` / `remove_all` find it. The combinations that mean nothing (self-aware with a
//! plain function pointer, `self_aware` twice) are compile errors: `ui-tests/subscribe/`.

use lumina::core_delegates::LifecycleSignal;
use lumina::{
    DelegateHandle, MulticastDelegate, ScriptDelegate, ThisSubscription, script_delegate,
};
use std::rc::Rc;

#[path = "support/call_log.rs"]
mod call_log;
use call_log::{log, taken};

fn saw(this: &ThisSubscription) {
    call_log::see(this.handle());
}

fn subject_static(_: u32) {
    log("subject");
}

fn subject_static0() {
    log("subject");
}

fn subject_static_ref<T>(_: &T) {
    log("subject");
}

/// The owner of member and method subscriptions.
struct Owner;

impl Owner {
    fn method(&self, _: u32) {
        log("subject");
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Lambda,
    Static,
    Member,
    Shared,
    SharedMember,
    Method,
}

const KINDS: [Kind; 6] = [
    Kind::Lambda,
    Kind::Static,
    Kind::Member,
    Kind::Shared,
    Kind::SharedMember,
    Kind::Method,
];

#[derive(Debug, Clone, Copy)]
struct Case {
    priority: Option<i32>,
    once: bool,
    muted: bool,
    self_aware: bool,
    kind: Kind,
}

/// Every meaningful combination: self-aware only with the finishes whose callable can take
/// its subscription.
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for priority in [None, Some(-3), Some(0), Some(7)] {
        for once in [false, true] {
            for muted in [false, true] {
                for self_aware in [false, true] {
                    for kind in KINDS {
                        let takes_it = !matches!(kind, Kind::Static | Kind::Method);
                        if self_aware && !takes_it {
                            continue;
                        }
                        cases.push(Case {
                            priority,
                            once,
                            muted,
                            self_aware,
                            kind,
                        });
                    }
                }
            }
        }
    }
    cases
}

/// Applies the case's options to any builder, then its finish: the one shape, written once
/// per mechanism by this macro only because the finishes' callables differ in arity.
macro_rules! subscribe {
    ($builder:expr, $case:expr, $owner:expr, $shared:ident $methods:ident $static:ident $Sig:ty, $($arg:ident)?) => {{
        let case: Case = $case;
        let mut builder = $builder;
        if let Some(priority) = case.priority {
            builder = builder.priority(priority);
        }
        if case.once {
            builder = builder.once();
        }
        if case.muted {
            builder = builder.muted();
        }
        if case.self_aware {
            let builder = builder.self_aware();
            match case.kind {
                Kind::Lambda => builder.add_lambda(|this $(, $arg)?| {
                    $(let _ = $arg;)?
                    saw(this);
                    log("subject");
                }),
                Kind::Member => builder.add_member($owner, |_: &Owner, this $(, $arg)?| {
                    $(let _ = $arg;)?
                    saw(this);
                    log("subject");
                }),
                Kind::Shared | Kind::SharedMember => subscribe!(@aware_shared $shared builder, case, $owner, $Sig, $($arg)?),
                Kind::Static | Kind::Method => unreachable!("not a meaningful combination"),
            }
        } else {
            match case.kind {
                Kind::Lambda => builder.add_lambda(|$($arg)?| {
                    $(let _ = $arg;)?
                    log("subject");
                }),
                Kind::Member => builder.add_member($owner, |_: &Owner $(, $arg)?| {
                    $(let _ = $arg;)?
                    log("subject");
                }),
                Kind::Shared | Kind::SharedMember => subscribe!(@plain_shared $shared builder, case, $owner, $($arg)?),
                Kind::Static => builder.add_static($static),
                Kind::Method => subscribe!(@method $methods builder, $owner),
            }
        }
    }};
    (@aware_shared shared $builder:ident, $case:ident, $owner:expr, $Sig:ty, $($arg:ident)?) => {
        if $case.kind == Kind::Shared {
            $builder.add_shared(|this| {
                let callable: Rc<$Sig> = Rc::new(move |$($arg)?| {
                    $(let _ = $arg;)?
                    saw(&this);
                    log("subject");
                });
                callable
            })
        } else {
            $builder.add_shared_member($owner, |this| {
                let callable: Rc<$Sig> = Rc::new(move |$($arg)?| {
                    $(let _ = $arg;)?
                    saw(&this);
                    log("subject");
                });
                callable
            })
        }
    };
    (@plain_shared shared $builder:ident, $case:ident, $owner:expr, $($arg:ident)?) => {
        if $case.kind == Kind::Shared {
            $builder.add_shared(Rc::new(|$($arg)?| {
                $(let _ = $arg;)?
                log("subject");
            }))
        } else {
            $builder.add_shared_member($owner, Rc::new(|$($arg)?| {
                $(let _ = $arg;)?
                log("subject");
            }))
        }
    };
    (@aware_shared no_shared $($rest:tt)*) => { unreachable!("a signal has no shared form") };
    (@plain_shared no_shared $($rest:tt)*) => { unreachable!("a signal has no shared form") };
    (@method methods $builder:ident, $owner:expr) => { $builder.add_method($owner, Owner::method) };
    (@method no_methods $builder:ident, $owner:expr) => { unreachable!("no method form here") };
}

/// What the first broadcast must log, given that a plain "reference" subscriber at priority 0
/// was added before the subject.
fn expected_first(case: &Case) -> Vec<&'static str> {
    if case.muted {
        return vec!["reference"];
    }
    if case.priority.unwrap_or(0) > 0 {
        vec!["subject", "reference"]
    } else {
        vec!["reference", "subject"]
    }
}

/// What the checks need of a delegate that broadcasts `u32`: the generic one and a declared
/// one have the same methods, not a common type.
trait Target {
    fn len(&self) -> usize;
    fn is_blocked(&self, handle: DelegateHandle) -> bool;
    fn unblock(&self, handle: DelegateHandle) -> bool;
    fn remove(&self, handle: DelegateHandle) -> bool;
    fn broadcast(&self, value: u32);
    /// Subscribes `case` again through the builder.
    fn resubscribe(&self, case: Case, owner: &Rc<Owner>) -> DelegateHandle;
    /// Removes by what the subscription was made from: `remove_static`, `remove_method`,
    /// `remove_all` or the handle.
    fn remove_by_key(&self, case: Case, owner: &Rc<Owner>, handle: DelegateHandle) -> usize;
}

macro_rules! impl_target {
    ($Type:ty, $shared:ident) => {
        impl Target for $Type {
            fn len(&self) -> usize {
                self.len()
            }
            fn is_blocked(&self, handle: DelegateHandle) -> bool {
                self.is_blocked(handle)
            }
            fn unblock(&self, handle: DelegateHandle) -> bool {
                self.unblock(handle)
            }
            fn remove(&self, handle: DelegateHandle) -> bool {
                self.remove(handle)
            }
            fn broadcast(&self, value: u32) {
                self.broadcast(value)
            }
            fn resubscribe(&self, case: Case, owner: &Rc<Owner>) -> DelegateHandle {
                subscribe!(self.subscribe(), case, owner, $shared methods subject_static dyn Fn(u32), value)
            }
            fn remove_by_key(&self, case: Case, owner: &Rc<Owner>, handle: DelegateHandle) -> usize {
                match case.kind {
                    Kind::Static => self.remove_static(subject_static),
                    Kind::Method => self.remove_method(owner, Owner::method),
                    Kind::Member | Kind::SharedMember => self.remove_all(owner),
                    Kind::Lambda | Kind::Shared => usize::from(self.remove(handle)),
                }
            }
        }
    };
}

lumina::declare_multicast_delegate!(OnValue(value: u32));

impl_target!(MulticastDelegate<dyn Fn(u32)>, shared);
impl_target!(OnValue, no_shared);

/// The checks after the subscription, on a delegate that broadcasts `u32`.
fn check_delegate(case: Case, delegate: &impl Target, handle: DelegateHandle, owner: &Rc<Owner>) {
    assert!(handle.is_valid(), "{case:?}");
    assert_eq!(
        delegate.len(),
        2,
        "{case:?}: a muted subscription still counts"
    );
    assert_eq!(delegate.is_blocked(handle), case.muted, "{case:?}");
    call_log::forget_seen();
    delegate.broadcast(1);
    assert_eq!(taken(), expected_first(&case), "{case:?}: order and muting");
    let ran = !case.muted;
    assert_eq!(
        call_log::seen(),
        (case.self_aware && ran).then_some(handle),
        "{case:?}: a self-aware subject receives its own handle"
    );
    if case.muted {
        assert!(delegate.unblock(handle), "{case:?}");
        delegate.broadcast(2);
        assert_eq!(
            taken(),
            expected_first(&Case {
                muted: false,
                ..case
            }),
            "{case:?}: unmuted"
        );
    }
    // It has run once now; a one-shot is spent.
    delegate.broadcast(3);
    let again: Vec<&str> = if case.once {
        vec!["reference"]
    } else {
        expected_first(&Case {
            muted: false,
            ..case
        })
    };
    assert_eq!(taken(), again, "{case:?}: once");
    assert_eq!(
        delegate.remove(handle),
        !case.once,
        "{case:?}: a spent one-shot's handle"
    );
    if !case.once {
        // Put it back the same way, then find it by what it was made from.
        let handle = delegate.resubscribe(case, owner);
        assert_eq!(
            delegate.remove_by_key(case, owner, handle),
            1,
            "{case:?}: found by its key"
        );
    }
}

#[test]
fn a1_every_combination_on_the_generic_delegate() {
    let cases = cases();
    assert_eq!(cases.len(), 4 * 2 * 2 * (6 + 4));
    for case in cases {
        let delegate: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
        let owner = Rc::new(Owner);
        let _reference = delegate.add_lambda(|_| log("reference"));
        let handle = subscribe!(delegate.subscribe(), case, &owner, shared methods subject_static dyn Fn(u32), value);
        check_delegate(case, &delegate, handle, &owner);
    }
}

#[test]
fn a1_every_combination_through_a_registration_view() {
    for case in cases() {
        let delegate: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
        let owner = Rc::new(Owner);
        let view = delegate.registration();
        let _reference = view.add_lambda(|_| log("reference"));
        let handle = subscribe!(view.subscribe(), case, &owner, shared methods subject_static dyn Fn(u32), value);
        check_delegate(case, &delegate, handle, &owner);
    }
}

/// A declared delegate's builder (`OnValueSubscribe`) and its view's: the same shape. The
/// declared builder takes no shared callable after `self_aware` (it has no shared member form).
#[test]
fn a1_every_combination_on_a_declared_delegate_and_its_view() {
    let declared = |case: &Case| !matches!(case.kind, Kind::Shared | Kind::SharedMember);
    for case in cases().into_iter().filter(declared) {
        let delegate = OnValue::new();
        let owner = Rc::new(Owner);
        let _reference = delegate.add_lambda(|_| log("reference"));
        let handle = subscribe!(delegate.subscribe(), case, &owner, no_shared methods subject_static dyn Fn(u32), value);
        check_delegate(case, &delegate, handle, &owner);

        let delegate = OnValue::new();
        let view = delegate.registration();
        let _reference = view.add_lambda(|_| log("reference"));
        let handle = subscribe!(view.subscribe(), case, &owner, no_shared methods subject_static dyn Fn(u32), value);
        check_delegate(case, &delegate, handle, &owner);
    }
}

#[test]
fn a1_every_combination_on_a_lifecycle_signal() {
    for case in cases().into_iter().filter(|case| case.kind != Kind::Method) {
        let signal = LifecycleSignal::new("on_test");
        let owner = Rc::new(Owner);
        let _reference = signal.add_lambda(|| log("reference"));
        call_log::forget_seen();
        if matches!(case.kind, Kind::Shared | Kind::SharedMember) {
            continue; // a signal takes no shared callable, plain or built
        }
        let handle = subscribe!(signal.subscribe(), case, &owner, no_shared no_methods subject_static0 dyn Fn(),);
        assert!(handle.is_valid(), "{case:?}");
        assert_eq!(signal.is_blocked(handle), case.muted, "{case:?}");
        signal.broadcast_and_clear();
        assert_eq!(taken(), expected_first(&case), "{case:?}");
        assert_eq!(
            call_log::seen(),
            (case.self_aware && !case.muted).then_some(handle),
            "{case:?}"
        );
        // Fired: a late subscription through the builder is refused like a plain one (C2).
        let late = subscribe!(signal.subscribe(), case, &owner, no_shared no_methods subject_static0 dyn Fn(),);
        assert!(!late.is_valid(), "{case:?}: too late");
    }
}

/// The payload of the script delegate below.
#[script_delegate]
#[derive(Clone)]
struct Hit {
    damage: u32,
}

/// A script delegate's native side: the same builder (lambda, static, member).
#[test]
fn a1_every_combination_on_a_script_delegate() {
    let native = |case: &Case| matches!(case.kind, Kind::Lambda | Kind::Static | Kind::Member);
    for case in cases().into_iter().filter(native) {
        let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
        let owner = Rc::new(Owner);
        let _reference = on_hit.add_lambda(|_| log("reference"));
        let subscribe = || subscribe!(on_hit.subscribe(), case, &owner, no_shared no_methods subject_static_ref dyn Fn(&Hit), hit);
        let handle = subscribe();
        assert_eq!(
            (on_hit.len(), on_hit.is_blocked(handle)),
            (2, case.muted),
            "{case:?}"
        );
        call_log::forget_seen();
        on_hit.broadcast(&Hit { damage: 1 });
        assert_eq!(taken(), expected_first(&case), "{case:?}");
        let seen = call_log::seen();
        assert_eq!(
            seen,
            (case.self_aware && !case.muted).then_some(handle),
            "{case:?}"
        );
        on_hit.unblock(handle);
        on_hit.broadcast(&Hit { damage: 2 });
        let spent = case.once && !case.muted;
        let again = if spent {
            vec!["reference"]
        } else {
            expected_first(&Case {
                muted: false,
                ..case
            })
        };
        assert_eq!(taken(), again, "{case:?}: once");
        if case.kind == Kind::Static && !case.once {
            assert_eq!(on_hit.remove_static(subject_static_ref), 1, "{case:?}");
        }
    }
}

#[test]
fn a1_a_builder_is_copied_to_make_several_subscriptions_alike() {
    let delegate: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let _reference = delegate.add_lambda(|_| log("reference"));
    let early = delegate.subscribe().priority(4).once();
    let _ = early.add_lambda(|_| log("subject"));
    let _ = early.add_static(subject_static);
    delegate.broadcast(0);
    delegate.broadcast(0);
    assert_eq!(taken(), ["subject", "subject", "reference", "reference"]);
}

/// A1, the removal key: subscriptions made with `.key(&rc)` (lambda, static, member; any other
/// option with it) are the key's: `remove_all(&key)` removes exactly them, `is_bound_to(&key)`
/// finds them, and once the key is dropped none of them runs again (M9), on every mechanism that
/// removes by owner.
#[test]
fn a1_a_removal_key_names_its_subscriptions_on_every_mechanism() {
    struct Level;
    // The generic delegate: three keyed subscriptions of different kinds, one unkeyed.
    let delegate: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
    let level = Rc::new(Level);
    let owner = Rc::new(Owner);
    let _ = delegate
        .subscribe()
        .key(&level)
        .add_lambda(|_| log("keyed lambda"));
    let _ = delegate
        .subscribe()
        .key(&level)
        .priority(3)
        .once()
        .add_static(subject_static);
    let _ = delegate
        .subscribe()
        .muted()
        .key(&level)
        .add_member(&owner, |_, _| log("keyed member"));
    let _ = delegate.add_lambda(|_| log("plain"));
    assert!(delegate.is_bound_to(&level));
    assert!(
        !delegate.is_bound_to(&owner),
        "the key takes the object's place"
    );
    delegate.broadcast(1);
    assert_eq!(taken(), ["subject", "keyed lambda", "plain"]);
    assert_eq!(
        delegate.remove_all(&level),
        2,
        "the lambda and the muted member"
    );
    assert_eq!(delegate.len(), 1);

    // Dropping the key: its subscriptions never run again.
    let level = Rc::new(Level);
    let _ = delegate
        .subscribe()
        .key(&level)
        .add_lambda(|_| log("keyed lambda"));
    drop(level);
    delegate.broadcast(2);
    assert_eq!(taken(), ["plain"]);

    // A declared delegate's builder, through its view.
    lumina::declare_multicast_delegate!(OnScore(points: u32));
    let on_score = OnScore::new();
    let hud = Rc::new(Level);
    let _ = on_score
        .registration()
        .subscribe()
        .key(&hud)
        .add_lambda(|_| log("hud"));
    let _ = on_score.add_lambda(|_| log("plain"));
    assert_eq!(on_score.remove_all(&hud), 1);
    on_score.broadcast(1);
    assert_eq!(taken(), ["plain"]);

    // A lifecycle signal and a script delegate's native side.
    let signal = LifecycleSignal::new("on_test_key");
    let _ = signal.subscribe().key(&hud).add_lambda(|| log("hud"));
    assert!(signal.is_bound_to(&hud));
    assert_eq!(signal.remove_all(&hud), 1);
    let on_hit: ScriptDelegate<Hit> = ScriptDelegate::new();
    let _ = on_hit.subscribe().key(&hud).add_lambda(|hit| {
        assert_eq!(hit.damage, 1);
        log("hud");
    });
    assert!(on_hit.is_bound_to(&hud));
    assert_eq!(on_hit.remove_all(&hud), 1);
    on_hit.broadcast(&Hit { damage: 1 });
    assert_eq!(taken(), Vec::<&str>::new());
}
