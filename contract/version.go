package contract

// ProductVersion is the version of Q-IM every binary reports (--version, the qim_build_info
// gauge). It follows semantic versioning; "-dev" marks an untagged build of main. It changes
// with a release (CHANGELOG.md), not with the protocol: the wire's compatibility is the frame
// header's version and the opcode table, not this string.
const ProductVersion = "0.1.0-dev"
