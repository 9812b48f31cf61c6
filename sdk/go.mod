module github.com/qim-dev/qim/sdk

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4 // indirect
	golang.org/x/sync v0.25.0 // indirect
	google.golang.org/protobuf v1.36.12
	lukechampine.com/blake3 v1.4.1 // indirect
	modernc.org/sqlite v1.62.0
)

require (
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/sys v0.49.0 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

require (
	github.com/qim-dev/qim/contract v0.0.0-00010101000000-000000000000
	github.com/qim-dev/qim/proto v0.0.0-00010101000000-000000000000
	github.com/qim-dev/qim/wire v0.0.0-00010101000000-000000000000
)

replace github.com/qim-dev/qim/contract => ../contract

replace github.com/qim-dev/qim/proto => ../proto

replace github.com/qim-dev/qim/wire => ../wire
