module github.com/qim-dev/qim/proto

go 1.26.0

require (
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
	lukechampine.com/blake3 v1.4.1 // indirect
)

require (
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

require github.com/qim-dev/qim/contract v0.0.0-00010101000000-000000000000

replace github.com/qim-dev/qim/contract => ../contract
