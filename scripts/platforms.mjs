// Every platform fairfs ships a binary for: its Rust target, the package and file
// name napi-rs's loader (binding.js) looks for, and how this machine builds it.
//
// linker: undefined for the two linux gnu targets (scripts/build.mjs's napi-rs cross
// toolchain path); 'zig' (cargo-zigbuild, which carries macOS, FreeBSD and musl libc
// stubs); 'mingw' (Debian's mingw-w64).
//
// Windows: Microsoft's CRT and SDK are not reachable from here, so the binary is a
// x86_64-pc-windows-gnu build. It is a plain PE DLL that official (msvc-built) Node
// loads, and it imports N-API from the host process at load time (napi/dyn-symbols,
// as msvc builds do), so it ships under the name the loader expects in official
// Node: win32-x64-msvc.

// macOS: only the module's registration symbol is exported. zig's Mach-O linker
// ignores rustc's -exported_symbols_list, so every other symbol is made hidden at
// compile time instead, std's too (it is built here with the same flags).
const hidden = ['-Zdefault-visibility=hidden']

export const platforms = {
  'x86_64-unknown-linux-gnu': { name: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc', format: 'elf-x86_64' },
  'aarch64-unknown-linux-gnu': { name: 'linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc', format: 'elf-aarch64' },
  'x86_64-unknown-linux-musl': {
    name: 'linux-x64-musl', os: 'linux', cpu: 'x64', libc: 'musl', format: 'elf-x86_64',
    // A cdylib needs the dynamic C runtime (musl targets default to static).
    linker: 'zig', artifact: 'libfairfs.so', rustflags: ['-Ctarget-feature=-crt-static'],
  },
  'aarch64-unknown-linux-musl': {
    name: 'linux-arm64-musl', os: 'linux', cpu: 'arm64', libc: 'musl', format: 'elf-aarch64',
    linker: 'zig', artifact: 'libfairfs.so', rustflags: ['-Ctarget-feature=-crt-static'],
  },
  'x86_64-apple-darwin': {
    name: 'darwin-x64', os: 'darwin', cpu: 'x64', format: 'macho-x86_64',
    linker: 'zig', artifact: 'libfairfs.dylib', rustflags: hidden, env: { MACOSX_DEPLOYMENT_TARGET: '10.13' },
  },
  'aarch64-apple-darwin': {
    name: 'darwin-arm64', os: 'darwin', cpu: 'arm64', format: 'macho-arm64',
    linker: 'zig', artifact: 'libfairfs.dylib', rustflags: hidden, env: { MACOSX_DEPLOYMENT_TARGET: '11.0' },
  },
  'x86_64-unknown-freebsd': {
    name: 'freebsd-x64', os: 'freebsd', cpu: 'x64', format: 'elf-x86_64-freebsd',
    linker: 'zig', artifact: 'libfairfs.so',
  },
  'x86_64-pc-windows-gnu': {
    name: 'win32-x64-msvc', os: 'win32', cpu: 'x64', format: 'pe-x86_64',
    linker: 'mingw', artifact: 'fairfs.dll',
    env: { CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER: 'x86_64-w64-mingw32-gcc' },
  },
}
