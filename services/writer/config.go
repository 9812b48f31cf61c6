package writer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/qim-dev/qim/contract"
)

// Config is the ConversationWriter's configuration. Each field maps 1:1 to the environment
// variable in its comment; FromEnv reads them and Validate fills defaults.
type Config struct {
	// RedisAddr (QIM_REDIS_ADDR) is the core Redis holding commit facts. Required. It must run
	// AOF with appendfsync always; the writer refuses to start otherwise.
	RedisAddr string
	// KafkaBrokers (QIM_KAFKA_BROKERS, comma-separated) host the qim.outbox topic. Required.
	KafkaBrokers []string
	// ListenAddr (QIM_WRITER_LISTEN) is the gRPC address. Default 127.0.0.1:7101.
	ListenAddr string
	// MetricsAddr (QIM_WRITER_METRICS) serves /metrics and /healthz. Default 127.0.0.1:9101.
	MetricsAddr string
	// RegionID (QIM_REGION_ID) is embedded in every message_id. Default 0.
	RegionID uint16
	// WriterID (QIM_WRITER_ID) pins the writer_id lease to one id (StatefulSets). Default: the
	// lowest free id is claimed at start. -1 means unset.
	WriterID int
	// InflightPerConn (QIM_WRITER_REQUEST_INFLIGHT_LIMIT) bounds sends in flight per gateway
	// stream; at the limit the writer stops reading the stream (back-pressure to the gateway).
	// Default 1,024, max 8,192. Lower hides latency in the gateway's queues; higher only adds
	// memory once Redis and Kafka are saturated.
	InflightPerConn int
	// BatchMax (QIM_WRITER_BATCH_MAX) is how many sends one Redis pipeline carries. Default 256.
	// Larger batches amortise the per-event-loop fsync of appendfsync always; a batch is never
	// held back waiting to fill, so this does not add latency.
	BatchMax int
	// RecoveryInterval (QIM_WRITER_RECOVERY_INTERVAL) is how often unfinished commits are resumed.
	// Default 2 s.
	RecoveryInterval time.Duration
	// RecoveryGrace (QIM_WRITER_RECOVERY_GRACE) is how old an unfinished commit must be before the
	// recovery loop takes it, so it does not race the live path. Default 5 s.
	RecoveryGrace time.Duration
	// AllowRelaxedRedis (QIM_DEV_ALLOW_RELAXED_REDIS=1) accepts appendfsync everysec on a
	// loopback Redis for development. Never in production: a host crash loses commit facts.
	AllowRelaxedRedis bool
	// MaxBodyBytes (QIM_WRITER_MAX_BODY) is the largest body accepted. Default and cap:
	// contract.MaxFramePayload.
	MaxBodyBytes int
}

// ErrConfig is wrapped by every validation error.
var ErrConfig = errors.New("writer: invalid config")

// Validate rejects bad values and fills documented defaults.
func (c *Config) Validate() error {
	if c.RedisAddr == "" {
		return fmt.Errorf("%w: QIM_REDIS_ADDR is required", ErrConfig)
	}
	if len(c.KafkaBrokers) == 0 {
		return fmt.Errorf("%w: QIM_KAFKA_BROKERS is required", ErrConfig)
	}
	setDefault(&c.ListenAddr, "127.0.0.1:7101")
	setDefault(&c.MetricsAddr, "127.0.0.1:9101")
	for _, a := range []string{c.ListenAddr, c.MetricsAddr} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: address %q: %v", ErrConfig, a, err)
		}
	}
	if c.InflightPerConn == 0 {
		c.InflightPerConn = contract.WriterInflightPerConnDefault
	}
	if c.InflightPerConn < 1 || c.InflightPerConn > contract.WriterInflightPerConnMax {
		return fmt.Errorf("%w: in-flight limit %d not in [1, %d]", ErrConfig, c.InflightPerConn, contract.WriterInflightPerConnMax)
	}
	if c.BatchMax == 0 {
		c.BatchMax = 256
	}
	if c.BatchMax < 1 || c.BatchMax > 4096 {
		return fmt.Errorf("%w: batch max %d not in [1, 4096]", ErrConfig, c.BatchMax)
	}
	if c.RecoveryInterval == 0 {
		c.RecoveryInterval = 2 * time.Second
	}
	if c.RecoveryGrace == 0 {
		c.RecoveryGrace = 5 * time.Second
	}
	if c.RecoveryInterval < 0 || c.RecoveryGrace < 0 {
		return fmt.Errorf("%w: negative recovery interval or grace", ErrConfig)
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = contract.MaxFramePayload
	}
	if c.MaxBodyBytes < 1 || c.MaxBodyBytes > contract.MaxFramePayload {
		return fmt.Errorf("%w: max body %d not in [1, %d]", ErrConfig, c.MaxBodyBytes, contract.MaxFramePayload)
	}
	if c.WriterID < -1 || c.WriterID > 0xFFFF {
		return fmt.Errorf("%w: writer id %d not in [0, 65535]", ErrConfig, c.WriterID)
	}
	return nil
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// FromEnv reads the QIM_* variables named on the fields. Unset variables leave defaults to
// Validate; malformed values are errors, never silently ignored.
func FromEnv() (Config, error) {
	c := Config{
		RedisAddr:         os.Getenv("QIM_REDIS_ADDR"),
		ListenAddr:        os.Getenv("QIM_WRITER_LISTEN"),
		MetricsAddr:       os.Getenv("QIM_WRITER_METRICS"),
		AllowRelaxedRedis: os.Getenv("QIM_DEV_ALLOW_RELAXED_REDIS") == "1",
		WriterID:          -1,
	}
	if b := os.Getenv("QIM_KAFKA_BROKERS"); b != "" {
		c.KafkaBrokers = strings.Split(b, ",")
	}
	ints := []struct {
		env string
		dst *int
	}{
		{"QIM_WRITER_ID", &c.WriterID},
		{"QIM_WRITER_REQUEST_INFLIGHT_LIMIT", &c.InflightPerConn},
		{"QIM_WRITER_BATCH_MAX", &c.BatchMax},
		{"QIM_WRITER_MAX_BODY", &c.MaxBodyBytes},
	}
	for _, i := range ints {
		if v := os.Getenv(i.env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("%w: %s=%q: %v", ErrConfig, i.env, v, err)
			}
			*i.dst = n
		}
	}
	if v := os.Getenv("QIM_REGION_ID"); v != "" {
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return c, fmt.Errorf("%w: QIM_REGION_ID=%q: %v", ErrConfig, v, err)
		}
		c.RegionID = uint16(n)
	}
	for env, dst := range map[string]*time.Duration{
		"QIM_WRITER_RECOVERY_INTERVAL": &c.RecoveryInterval, "QIM_WRITER_RECOVERY_GRACE": &c.RecoveryGrace,
	} {
		if v := os.Getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return c, fmt.Errorf("%w: %s=%q: %v", ErrConfig, env, v, err)
			}
			*dst = d
		}
	}
	return c, nil
}
