//! A trace of every broadcast (rule V2): with the cargo feature `trace`, each broadcast and
//! each bus send is a [`tracing`] span at level TRACE, with one child span per subscriber call
//! whose `bind_site` field is where that subscription was made (`file:line:column`).
//!
//! TRACE, not DEBUG: a span per subscriber call is the finest grain the runtime has, and a
//! game that logs at DEBUG should not pay for it unless it asks for it.
//!
//! Without the feature every helper here is an empty `#[inline(always)]` function returning a
//! zero-sized guard, so the broadcast loops compile to what they were.
//!
//! ```
//! use lumina::MulticastDelegate;
//!
//! let on_tick: MulticastDelegate<dyn Fn(u32)> = MulticastDelegate::new();
//! let _handle = on_tick.add_lambda(|_| {});
//! // With `--features trace` and a `tracing` subscriber installed, this broadcast is a span
//! // `broadcast` with one child span `subscriber` whose `bind_site` is the line above.
//! on_tick.broadcast(1);
//! ```

/// The guard of one span: entered while it lives. Zero-sized without the feature.
#[cfg(feature = "trace")]
pub(crate) struct Span(#[allow(dead_code)] tracing::span::EnteredSpan);

/// The guard of one span: entered while it lives. Zero-sized without the feature.
#[cfg(not(feature = "trace"))]
pub(crate) struct Span;

/// A broadcast of the list whose subscribers have type `C`: a span `broadcast` whose `source`
/// field names that type (a declared delegate's names the declared type instead:
/// [`broadcast_declared`]).
#[inline(always)]
pub(crate) fn broadcast<C: ?Sized>() -> Span {
    broadcast_of(std::any::type_name::<C>)
}

/// A broadcast of the delegate declared as the type `D` (`declare_multicast_delegate!`): a span
/// `broadcast` whose `source` is the declared name (`D`'s type name without its module path,
/// with its generic arguments if it has any), not its subscribers' type.
#[inline(always)]
pub(crate) fn broadcast_declared<D: ?Sized>() -> Span {
    broadcast_of(|| declared_name(std::any::type_name::<D>()))
}

/// A span `broadcast` whose `source` field is what `source` returns (called only with the
/// feature): a source with a name of its own (a lifecycle signal's, a script delegate's payload
/// type).
#[inline(always)]
pub(crate) fn broadcast_of(source: impl FnOnce() -> &'static str) -> Span {
    #[cfg(feature = "trace")]
    {
        Span(tracing::trace_span!("broadcast", source = source()).entered())
    }
    #[cfg(not(feature = "trace"))]
    {
        let _ = source;
        Span
    }
}

/// `full`, a type name, without the module path of the type itself: `game::FOnScore<u32>` is
/// `FOnScore<u32>`.
fn declared_name(full: &'static str) -> &'static str {
    let head = full.find('<').unwrap_or(full.len());
    let start = full[..head].rfind("::").map_or(0, |at| at + 2);
    &full[start..]
}

/// No span: for a loop whose caller's span covers it (the bus's channel walk is its send).
#[inline(always)]
pub(crate) fn none() -> Span {
    #[cfg(feature = "trace")]
    {
        Span(tracing::Span::none().entered())
    }
    #[cfg(not(feature = "trace"))]
    {
        Span
    }
}

/// An event processor's dispatch of an event of type `E`: a span `dispatch` whose `event` field
/// names that type; the handler lists it walks are broadcasts under it.
#[inline(always)]
#[cfg_attr(
    not(feature = "trace"),
    expect(
        clippy::extra_unused_type_parameters,
        reason = "only the trace names the type"
    )
)]
pub(crate) fn dispatch<E>() -> Span {
    #[cfg(feature = "trace")]
    {
        Span(tracing::trace_span!("dispatch", event = std::any::type_name::<E>()).entered())
    }
    #[cfg(not(feature = "trace"))]
    {
        Span
    }
}

/// A bus send on the channel of `tag`: a span `send` whose `tag` field is the tag's name.
#[inline(always)]
pub(crate) fn send(tag: impl std::fmt::Display) -> Span {
    #[cfg(feature = "trace")]
    {
        Span(tracing::trace_span!("send", tag = %tag).entered())
    }
    #[cfg(not(feature = "trace"))]
    {
        let _ = tag;
        Span
    }
}

/// One subscriber call: a span `subscriber` whose `bind_site` field is the subscription's
/// interned bind site (`site`, its number; `?` when unknown).
#[inline(always)]
pub(crate) fn subscriber(site: u32) -> Span {
    #[cfg(feature = "trace")]
    {
        // The site is looked up (a lock) only for a span some subscriber wants.
        let span = tracing::trace_span!("subscriber", bind_site = tracing::field::Empty);
        if !span.is_disabled() {
            match crate::bind_site::location(site) {
                Some(at) => span.record("bind_site", tracing::field::display(at)),
                None => span.record("bind_site", "?"),
            };
        }
        Span(span.entered())
    }
    #[cfg(not(feature = "trace"))]
    {
        let _ = site;
        Span
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_declared_name_loses_its_module_path_and_keeps_its_generic_arguments() {
        assert_eq!(super::declared_name("game::hud::FOnScore"), "FOnScore");
        assert_eq!(super::declared_name("FOnScore"), "FOnScore");
        assert_eq!(
            super::declared_name("game::FOnPick<alloc::string::String>"),
            "FOnPick<alloc::string::String>"
        );
    }
}
