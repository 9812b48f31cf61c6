package cqlstore

import (
	"errors"
	"fmt"
	"testing"
)

func TestDurabilityJudgement(t *testing.T) {
	unreadable := errors.New("no settings table")
	for _, tc := range []struct {
		d       Durability
		readErr error
		ok      bool
	}{
		{Durability{MinReplicas: 3}, nil, true},
		{Durability{MinReplicas: 2, CommitlogSync: "periodic"}, nil, true},
		{Durability{MinReplicas: 1, CommitlogSync: "group"}, nil, true},
		{Durability{MinReplicas: 1, CommitlogSync: "batch"}, nil, true},
		{Durability{MinReplicas: 1, CommitlogSync: "periodic"}, nil, false},
		{Durability{MinReplicas: 1, CommitlogSync: ""}, nil, false},
		{Durability{MinReplicas: 1}, unreadable, false},
	} {
		err := tc.d.judge(tc.readErr)
		var de *DurabilityError
		if (err == nil) != tc.ok || (err != nil && !errors.As(err, &de)) {
			t.Errorf("judge(%+v, %v) = %v, want ok %v (a *DurabilityError otherwise)", tc.d, tc.readErr, err, tc.ok)
		}
	}
}

func TestMinReplicas(t *testing.T) {
	for _, tc := range []struct {
		repl map[string]string
		want int // 0: an error
	}{
		{map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"}, 1},
		{map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "2"}, 2},
		{map[string]string{"class": "NetworkTopologyStrategy", "dc1": "3/1"}, 2}, // one of three is transient
		{map[string]string{"class": "LocalStrategy"}, 0},
		{map[string]string{"class": "SimpleStrategy", "replication_factor": "x"}, 0},
	} {
		got, err := minReplicas(tc.repl)
		if got != tc.want || (err == nil) != (tc.want > 0) {
			t.Errorf("minReplicas(%v) = %d, %v; want %d", tc.repl, got, err, tc.want)
		}
	}
}

// The stack's single Cassandra node runs commitlog_sync group (gates/stack), so a keyspace with
// one replica passes and names the mode; a keyspace with two replicas passes without reading it.
func TestCheckDurabilityOnTheStackNode(t *testing.T) {
	st := migrated(t)
	d, err := st.CheckDurability(testCtx(t))
	if err != nil || d.MinReplicas != 1 || d.CommitlogSync != "group" {
		t.Fatalf("CheckDurability = %+v, %v; want one replica on a group-commitlog node", d, err)
	}
	ks := st.cfg.Keyspace + "_rf2"
	if err := st.s.Query(fmt.Sprintf(`CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}`, ks)).
		WithContext(testCtx(t)).Exec(); err != nil {
		t.Fatal(err)
	}
	other := &Store{cfg: Config{Keyspace: ks}, s: st.s}
	d, err = other.CheckDurability(testCtx(t))
	if err != nil || d.MinReplicas != 2 || d.CommitlogSync != "" {
		t.Fatalf("CheckDurability(RF 2) = %+v, %v; want 2 replicas, the commitlog not read", d, err)
	}
}
