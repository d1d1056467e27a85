//! Randomness from the runtime (`crypto.randomUUID`): ids no one can guess, and seeds
//! no visitor can predict.

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = crypto, js_name = randomUUID)]
    fn random_uuid() -> String;
}

/// A random UUID.
pub(crate) fn uuid() -> String {
    random_uuid()
}

/// A seed no visitor can predict: from a random UUID.
pub(crate) fn seed() -> u64 {
    random_uuid()
        .bytes()
        .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b))
}
