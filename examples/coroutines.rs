//! Coroutines on the game thread (rule X5): a door that opens once its switch is flipped, waits
//! two frames, then plays a sound, written as one `async` block instead of a state machine.
//!
//! The switch is flipped by the E key, through a typed input handler (rule X1).
//!
//! ```text
//! cargo run --example coroutines
//! ```

use std::cell::Cell;
use std::rc::Rc;

use lumina::event::{EventProcessor, InputLayer, Key, KeyPressedEvent, Modifiers};
use lumina::{MulticastDelegate, coroutine, main_thread};

/// A door of the level.
struct Door {
    name: &'static str,
    open: Cell<bool>,
}

/// Plays a sound (here: says so).
fn play_sound(name: &str) {
    println!("[frame {}] sound: {name}", main_thread::frame());
}

fn main() {
    main_thread::designate_game_thread();

    // The switch's delegate: who flipped it.
    let switch = Rc::new(MulticastDelegate::<dyn Fn(String)>::new());
    let door = Rc::new(Door {
        name: "vault door",
        open: Cell::new(false),
    });

    // The whole sequence, in order, as it reads in the design document.
    let sequence = {
        let (switch, door) = (Rc::clone(&switch), Rc::clone(&door));
        coroutine::spawn_local(async move {
            println!(
                "[frame {}] the {} waits for its switch",
                main_thread::frame(),
                door.name
            );
            let Ok((who,)) = switch.next().await else {
                println!("the switch is gone: the door stays shut");
                return;
            };
            door.open.set(true);
            println!(
                "[frame {}] {who} flipped the switch: the {} opens",
                main_thread::frame(),
                door.name
            );
            coroutine::frames(2).await;
            play_sound("door_open.wav");
        })
    };

    // E flips the switch: a typed handler gets `&mut KeyPressedEvent`, no downcast.
    let input = EventProcessor::new();
    let use_key = {
        let switch = Rc::clone(&switch);
        input.add_handler::<KeyPressedEvent>(InputLayer::Default, move |key| {
            if key.key != Key::E {
                return false;
            }
            switch.broadcast("the player".to_owned());
            true
        })
    };

    // The game loop: one drain of the main-thread queue per frame.
    for frame in 1..=6 {
        main_thread::process_queue();
        if frame == 2 {
            println!("[frame 2] the player presses E");
            input.dispatch(KeyPressedEvent::new(Key::E, Modifiers::NONE));
        }
    }
    println!("door open: {}", door.open.get());
    println!("sequence: {:?}", sequence.status());
    drop(use_key);
}
