// Package luascripttest is test support for the stores' Lua scripts: a deterministic dump of a
// Redis database (keyspace.go) and, in a failpoints build, the script-fault matrix (matrix.go)
// that every store's TestLuaFault test runs: for each code path of a mutating script, a fault
// before its first write and right after each write, then the caller's retry, compared with a
// fault-free run.
//
// What it must never do: be imported by production code, or flush a database other than the one
// a test gave it (Matrix refuses database 0).
package luascripttest
