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
/// field names that type.
#[inline(always)]
#[cfg_attr(
    not(feature = "trace"),
    expect(
        clippy::extra_unused_type_parameters,
        reason = "only the trace names the type"
    )
)]
pub(crate) fn broadcast<C: ?Sized>() -> Span {
    #[cfg(feature = "trace")]
    {
        Span(tracing::trace_span!("broadcast", source = std::any::type_name::<C>()).entered())
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
