fn main() {
    // Only the Node binding needs N-API's link setup; the core builds without it.
    if std::env::var_os("CARGO_FEATURE_NODE").is_some() {
        napi_build::setup();
    }
}
