module github.com/qim-dev/qim/contract

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4 // indirect
	google.golang.org/protobuf v1.36.12
	lukechampine.com/blake3 v1.4.1
)

require (
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

require (
	github.com/qim-dev/qim/proto v0.0.0-00010101000000-000000000000
	github.com/qim-dev/qim/wire v0.0.0-00010101000000-000000000000
)

replace github.com/qim-dev/qim/proto => ../proto

replace github.com/qim-dev/qim/wire => ../wire
