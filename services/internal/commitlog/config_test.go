package commitlog

import (
	"errors"
	"testing"
	"time"

	"github.com/qim-dev/qim/contract"
)

func TestOutboxConfigValidate(t *testing.T) {
	brokers := []string{"127.0.0.1:9092"}
	tests := []struct {
		name    string
		cfg     OutboxConfig
		wantErr bool
	}{
		{"defaults", OutboxConfig{Brokers: brokers}, false},
		{"no brokers", OutboxConfig{}, true},
		{"negative linger", OutboxConfig{Brokers: brokers, Linger: -time.Millisecond}, true},
		{"linger above cap", OutboxConfig{Brokers: brokers, Linger: time.Second}, true},
		{"negative buffer", OutboxConfig{Brokers: brokers, MaxBufferedRecords: -1}, true},
		{"delivery below franz-go minimum", OutboxConfig{Brokers: brokers, DeliveryTimeout: time.Millisecond}, true},
		{"record larger than buffer", OutboxConfig{Brokers: brokers, MaxRecordBytes: 2 << 20, MaxBufferedBytes: 1 << 20}, true},
		{"explicit values kept", OutboxConfig{Brokers: brokers, Linger: time.Millisecond, MaxBufferedRecords: 7}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			err := cfg.Validate()
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("Validate() = %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if cfg.Topic != contract.TopicOutbox || cfg.ClientID == "" || cfg.MaxBufferedRecords <= 0 ||
				cfg.MaxBufferedBytes <= 0 || cfg.MaxRecordBytes <= 0 || cfg.DeliveryTimeout < minDeliveryTimeout {
				t.Fatalf("defaults not filled: %+v", cfg)
			}
			if tc.cfg.Linger != cfg.Linger || (tc.cfg.MaxBufferedRecords != 0 && tc.cfg.MaxBufferedRecords != cfg.MaxBufferedRecords) {
				t.Fatalf("explicit values changed: %+v → %+v", tc.cfg, cfg)
			}
		})
	}
}

func TestDispatchConfigDefaults(t *testing.T) {
	cfg := DispatchConfig{Brokers: []string{"127.0.0.1:9092"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Topic != contract.TopicDispatch || cfg.DisableIdempotence {
		t.Fatalf("dispatch defaults: %+v", cfg)
	}
	if err := (&DispatchConfig{}).Validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("empty dispatch config: %v, want ErrConfig", err)
	}
}
