//! Where each subscription was made (rule B5): every `add_*`, `bind_managed` and
//! `register_event_handler` is `#[track_caller]`, and the list keeps the caller's location with
//! the subscription, so a delegate can answer "who is subscribed to this, and from where?"
//! ([`MulticastDelegate::subscriptions`](crate::MulticastDelegate::subscriptions), `Debug`), and
//! diagnostics (a late one-shot subscription, C2; leaked managed bindings, SD4) name it.
//!
//! A location costs no memory per subscription: locations are interned process-wide into a
//! small number that shares the subscription's id word.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::panic::Location;
use std::sync::{Mutex, PoisonError};

use crate::handle::DelegateHandle;

/// How many bits a bind site's number takes in an entry's word.
pub(crate) const SITE_BITS: u32 = 21;

/// The process-wide table: number -> location (0 is "unknown"), and location -> number.
struct Table {
    sites: Vec<&'static Location<'static>>,
    numbers: HashMap<usize, u32>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

thread_local! {
    /// A direct-mapped cache of the table, so a repeated add from the same line takes no lock.
    static CACHE: [Cell<(usize, u32)>; 64] = const { [const { Cell::new((0, 0)) }; 64] };
}

/// The number of `site`, interned on first use (0 once the table is full: "unknown").
pub(crate) fn intern(site: &'static Location<'static>) -> u32 {
    let address = std::ptr::from_ref(site).addr();
    let slot = (address >> 3) % 64;
    if let Ok(Some(number)) = CACHE.try_with(|cache| {
        let (cached, number) = cache[slot].get();
        (cached == address).then_some(number)
    }) {
        return number;
    }
    let number = {
        let mut table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
        let table = table.get_or_insert_with(|| Table {
            sites: Vec::new(),
            numbers: HashMap::new(),
        });
        match table.numbers.get(&address) {
            Some(&number) => number,
            None if table.sites.len() + 1 < (1 << SITE_BITS) => {
                table.sites.push(site);
                let number = u32::try_from(table.sites.len()).unwrap_or(0);
                table.numbers.insert(address, number);
                number
            }
            None => 0,
        }
    };
    let _ = CACHE.try_with(|cache| cache[slot].set((address, number)));
    number
}

/// The location interned as `number`.
pub(crate) fn location(number: u32) -> Option<&'static Location<'static>> {
    let index = usize::try_from(number).ok()?.checked_sub(1)?;
    let table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    table.as_ref()?.sites.get(index).copied()
}

/// Whether a subscription's owner (of a member binding) is alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// Not a member binding: no owner.
    NoOwner,
    /// A member binding whose object is alive.
    Alive,
    /// A member binding whose object was dropped: it never runs again and is pruned (M9).
    Dropped,
}

/// One subscription as a delegate lists it (rule B5): its handle, where it was made, and
/// whether its owner lives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Subscription {
    /// The handle `add_*` returned.
    pub handle: DelegateHandle,
    /// Where the `add_*` call was (`None` if more than two million distinct places subscribed
    /// in this process).
    pub bind_site: Option<&'static Location<'static>>,
    /// The owner of a member binding.
    pub owner: OwnerState,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.handle)?;
        match self.bind_site {
            Some(site) => write!(f, " at {site}")?,
            None => write!(f, " at an unknown place")?,
        }
        match self.owner {
            OwnerState::NoOwner => Ok(()),
            OwnerState::Alive => write!(f, " (owner alive)"),
            OwnerState::Dropped => write!(f, " (owner dropped)"),
        }
    }
}
