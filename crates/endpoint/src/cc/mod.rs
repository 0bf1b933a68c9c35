//! Instrumented congestion control for quinn.
//!
//! `InstrumentedFactory` builds, per connection, an `InstrumentedController` that wraps the
//! real algorithm (quinn's Cubic / NewReno / BBR, or our `CubicN` for N-connection
//! emulation) and
//! * applies the knobs (MACW cap, initial window),
//! * drives the Table 3 state machine (`state.rs`) from the events quinn gives a controller,
//! * writes `recovery:congestion_state_updated`, `recovery:metrics_updated` and
//!   `recovery:packet_lost` (with the trigger inferred as described at `loss_trigger::infer_trigger`).
//!
//! One file per concern: `instrumented.rs` (the factory and the wrapping controller),
//! `loss_trigger.rs` (the loss-trigger inference), `state.rs` (the state machine),
//! `knobs.rs` (the flags), `cubic_n.rs` (N-connection Cubic).

pub mod cubic_n;
pub mod instrumented;
pub mod knobs;
pub mod loss_trigger;
pub mod state;

pub use instrumented::InstrumentedFactory;
pub use knobs::{Algorithm, CcKnobs};
