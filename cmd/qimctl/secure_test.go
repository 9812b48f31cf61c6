package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qim-dev/qim/gates/stack"
)

// qimctl's store commands reach stores that require TLS and credentials with the variables the
// services read, and are refused without them (so the test cannot pass on a plaintext stack).
func TestStoreCommandsOnSecureStores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis and Kafka with TLS and credentials")
	}
	ctx := context.Background()
	st := stack.NewProcess(stack.WithRoot(t.TempDir()), stack.WithSecureStores(true), stack.WithDispatchShards(4))
	t.Cleanup(func() { _ = st.Down(context.Background()) })
	if err := st.Up(ctx); err != nil {
		t.Fatal(err)
	}
	ep := st.Endpoints()
	sec := ep.Secure
	env := map[string]string{
		"QIM_REDIS_ADDR": ep.RedisCore, "QIM_KAFKA_BROKERS": strings.Join(ep.KafkaBrokers, ","), "QIM_MAILBOX_SHARD_COUNT": "4",
		"QIM_REDIS_USERNAME": sec.RedisUser, "QIM_REDIS_PASSWORD_FILE": sec.RedisPasswordFile, "QIM_REDIS_TLS_CA": sec.CAFile,
		"QIM_KAFKA_SASL_MECHANISM": sec.KafkaSASLMechanism, "QIM_KAFKA_USERNAME": sec.KafkaUser,
		"QIM_KAFKA_PASSWORD_FILE": sec.KafkaPasswordFile, "QIM_KAFKA_TLS_CA": sec.CAFile,
	}
	with := func(k string) string { return env[k] }
	without := func(k string) string {
		if strings.Contains(k, "ADDR") || strings.Contains(k, "BROKERS") || strings.Contains(k, "SHARD") {
			return env[k]
		}
		return ""
	}
	revoke := &revokeOptions{user: 7, device: "phone", before: "now"}
	if err := runRevoke(ctx, revoke, with, &bytes.Buffer{}); err != nil {
		t.Fatalf("revoke with the credentials: %v", err)
	}
	if err := runRevoke(ctx, revoke, without, &bytes.Buffer{}); err == nil {
		t.Fatal("revoke without credentials reached the secure Redis")
	}
	var out bytes.Buffer
	topics := &kafkaTopicsOptions{replicas: 1, timeout: time.Minute}
	if err := runKafkaTopics(ctx, topics, with, &out); err != nil || !strings.Contains(out.String(), "qim.dispatch: 4 partitions") {
		t.Fatalf("kafka topics with the credentials: %v\n%s", err, out.String())
	}
	topics.timeout = 5 * time.Second
	if err := runKafkaTopics(ctx, topics, without, &bytes.Buffer{}); err == nil {
		t.Fatal("kafka topics without credentials reached the secure brokers")
	}
}
