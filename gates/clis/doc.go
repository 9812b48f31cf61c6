// Package clis holds the tests of what every Q-IM binary promises on its command line: --version
// from the build, and one name per thing across binaries. It has no code of its own: the tests
// build every program under cmd/ into a temporary directory and run it, as a user would.
package clis
