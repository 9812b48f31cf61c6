# Q-IM developer entry points. `make test` is what CI runs (via .ci/run); it installs what it
# needs (Debian redis-server, Kafka and Cassandra jars from Maven Central) on a fresh machine.
SHELL := /bin/bash
GO ?= go
FUZZTIME ?= 15s
TEST_TIMEOUT ?= 20m
export PATH := $(CURDIR)/bin:$(PATH)

.PHONY: all setup demo proto proto-check lint test test-unit fuzz bench build clean

all: build

## setup: install redis-server, JDK 17, Maven; fetch Kafka/Cassandra jars into the cache (idempotent)
setup:
	bash scripts/setup.sh

## demo: stack + every service, two SDK clients talking, a 30 s load with an HTML report; Ctrl-C tears down
demo: setup
	$(GO) run ./cmd/qim-gate demo

## proto: regenerate Go from proto/ (installs protoc and protoc-gen-go if missing)
proto:
	bash scripts/gen-proto.sh

proto-check:
	bash scripts/gen-proto.sh --check

## lint: contract lint (gofmt, go vet, golangci-lint, the contract rules of gates/lint)
lint:
	$(GO) run ./cmd/qim-lint --root .

## test: unit + integration tests against real servers, then a bounded fuzz run of the wire codec
test: setup
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) fuzz

## test-unit: tests that need no server (-short skips the integration suites)
test-unit:
	$(GO) test -short -count=1 ./...

fuzz:
	$(GO) test ./wire -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME)

bench:
	$(GO) test ./wire -run '^$$' -bench . -benchmem -benchtime 1s

build:
	$(GO) build -o bin/ ./cmd/...

clean:
	rm -rf bin out reports
