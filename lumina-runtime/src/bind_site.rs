//! Where each subscription was made (rule B5): every `add_*`, `bind_managed` and
//! `register_event_handler` is `#[track_caller]`, and the list keeps the caller's location with
//! the subscription, so a delegate can answer "who is subscribed to this, and from where?"
//! ([`MulticastDelegate::subscriptions`](crate::MulticastDelegate::subscriptions), `Debug`), and
//! diagnostics (a late one-shot subscription, C2; leaked managed bindings, SD4) name it.
//!
//! A location costs no memory per subscription: locations are interned process-wide into a
//! small number that shares the subscription's id word.
//!
//! # Bind sites in game modules (R5)
//!
//! A `#[track_caller]` location made by a game module's code lies in the module's library, which
//! an unload unmaps, while a subscription made there may outlive the module (a module may
//! subscribe a callable whose code is the engine's). So nothing here keeps a module's
//! `Location`: interning copies the file name into a process-wide set of names the runtime owns
//! (each distinct name once, never freed), and a [`BindSite`] is that name with its line and
//! column. The `Location`'s address is only a cache key, and every unmapping of a module starts
//! a new epoch that empties the per-thread caches, so an address a later
//! library reuses is never taken for the old site.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::handle::DelegateHandle;

/// How many bits a bind site's number takes in an entry's word.
pub(crate) const SITE_BITS: u32 = 20;

/// Where a subscription was made: a file, line and column, like
/// [`Location`], but owned by the runtime, so it stays valid after the game
/// module whose code made the subscription is unloaded (rule R5). Displays as `file:line:column`.
///
/// A plain `Copy` value: its three parts are public fields.
///
/// ```
/// use lumina::MulticastDelegate;
///
/// let on_tick: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
/// let line = line!() + 1;
/// let _handle = on_tick.add_lambda(|_| {});
/// let site = on_tick.subscriptions()[0].bind_site.expect("recorded");
/// assert_eq!((site.file, site.line), (file!(), line));
/// println!("subscribed at {site}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BindSite {
    /// The source file, as [`Location::file`] gives it. The text is the runtime's own copy, not
    /// the module's: it lives as long as the process.
    pub file: &'static str,
    /// The line, starting at 1.
    pub line: u32,
    /// The column, starting at 1.
    pub column: u32,
}

impl fmt::Display for BindSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// The process-wide table: number -> site (0 is "unknown"), and site -> number.
struct Table {
    sites: Vec<BindSite>,
    numbers: HashMap<BindSite, u32>,
    /// The file names, copied once each: what every [`BindSite`] points at.
    files: HashSet<&'static str>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// Bumped when a game module's library is unmapped: cache entries of an older epoch are stale
/// (their address may now hold another library's location).
static EPOCH: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// A direct-mapped cache of the table, so a repeated add from the same line takes no lock:
    /// `(location address, epoch, number)`.
    static CACHE: [Cell<(usize, u32, u32)>; 64] =
        const { [const { Cell::new((0, 0, 0)) }; 64] };
}

/// The number of `site`, interned on first use (0 once the table is full: "unknown").
pub(crate) fn intern(site: &'static Location<'static>) -> u32 {
    let address = std::ptr::from_ref(site).addr();
    let slot = (address >> 3) % 64;
    let epoch = EPOCH.load(Ordering::Acquire);
    if let Ok(Some(number)) = CACHE.try_with(|cache| {
        let (cached, cached_epoch, number) = cache[slot].get();
        (cached == address && cached_epoch == epoch).then_some(number)
    }) {
        return number;
    }
    let number = {
        let mut table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
        let table = table.get_or_insert_with(|| Table {
            sites: Vec::new(),
            numbers: HashMap::new(),
            files: HashSet::new(),
        });
        // The file name is read here, while the code that called is running (so its library is
        // mapped), and copied unless the same name was copied before.
        let file = match table.files.get(site.file()) {
            Some(&file) => file,
            None => {
                let file: &'static str = Box::leak(site.file().into());
                table.files.insert(file);
                file
            }
        };
        let key = BindSite {
            file,
            line: site.line(),
            column: site.column(),
        };
        match table.numbers.get(&key) {
            Some(&number) => number,
            None if table.sites.len() + 1 < (1 << SITE_BITS) => {
                table.sites.push(key);
                let number = u32::try_from(table.sites.len()).unwrap_or(0);
                table.numbers.insert(key, number);
                number
            }
            None => 0,
        }
    };
    let _ = CACHE.try_with(|cache| cache[slot].set((address, epoch, number)));
    number
}

/// The site interned as `number`.
pub(crate) fn location(number: u32) -> Option<BindSite> {
    let index = usize::try_from(number).ok()?.checked_sub(1)?;
    let table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    table.as_ref()?.sites.get(index).copied()
}

/// A game module's library is about to be unmapped: every thread's cache of location addresses
/// is stale from now on (the table itself holds no address).
pub(crate) fn library_unmapped() {
    EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// Whether a subscription's owner (of a member binding) is alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
    /// Where the `add_*` call was (`None` if more than a million distinct places subscribed
    /// in this process). An owned value: it outlives the game module that subscribed (R5).
    pub bind_site: Option<BindSite>,
    /// The owner of a member binding.
    pub owner: OwnerState,
    /// Its priority (higher runs first; 0 unless set, B3).
    pub priority: i32,
    /// Whether it is muted (blocked, X4): it keeps its place but broadcasts skip it.
    pub muted: bool,
    /// Whether it is one-shot (X3): removed right before its first call. A bus listener added
    /// with a `listen_*_once` method is too (it removes itself at its first message).
    pub one_shot: bool,
    /// Whether it is self-aware (X6): made with `.self_aware()` (or a `*_self_aware` method), its
    /// callable receives its own subscription.
    pub self_aware: bool,
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

#[cfg(test)]
mod tests {
    use super::{intern, library_unmapped, location};
    use std::panic::Location;

    #[test]
    fn r5_a_bind_site_is_a_copy_owned_by_the_runtime() {
        let caller = Location::caller();
        let number = intern(caller);
        let site = location(number).expect("interned");
        assert_eq!(
            (site.file, site.line, site.column),
            (caller.file(), caller.line(), caller.column())
        );
        // Not the caller's bytes (which a game module's unload would unmap).
        assert_ne!(site.file.as_ptr(), caller.file().as_ptr());
        assert_eq!(site.to_string(), caller.to_string());
        // A later unmapping empties the address caches; the same place keeps its number.
        library_unmapped();
        assert_eq!(intern(caller), number);
        let elsewhere = Location::caller();
        assert_ne!(intern(elsewhere), number);
        assert_eq!(location(0), None);
    }
}
