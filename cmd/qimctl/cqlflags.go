package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qim-dev/qim/services"
	"github.com/qim-dev/qim/services/archiver"
)

// cqlFlags are the archive's connection flags of every qimctl command that reaches CQL; each
// falls back to the variable the services read, so an operator's service environment is enough.
type cqlFlags struct {
	hosts       string // QIM_CQL_HOSTS
	keyspace    string // QIM_CQL_KEYSPACE
	noDiscovery bool   // QIM_CQL_NO_PEER_DISCOVERY
}

func (c *cqlFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	// Named after the variables (QIM_CQL_HOSTS → --cql-hosts), as every address flag of the tools is.
	f.StringVar(&c.hosts, "cql-hosts", "", "CQL contact points host:port,… (default $QIM_CQL_HOSTS)")
	f.StringVar(&c.keyspace, "cql-keyspace", "", "keyspace (default $QIM_CQL_KEYSPACE, else "+archiver.DefaultKeyspace+")")
	f.BoolVar(&c.noDiscovery, "cql-no-peer-discovery", false, "connect to the contact points only (default $QIM_CQL_NO_PEER_DISCOVERY)")
}

// resolve applies the environment fallbacks; without a contact point it is an error naming
// both ways to give one, prefixed with the command (cmd).
func (c *cqlFlags) resolve(cmd string, getenv func(string) string) (archiver.MigrateConfig, error) {
	cfg := archiver.MigrateConfig{Keyspace: firstNonEmpty(c.keyspace, getenv("QIM_CQL_KEYSPACE")),
		NoPeerDiscovery: c.noDiscovery || getenv("QIM_CQL_NO_PEER_DISCOVERY") == "true"}
	hosts := firstNonEmpty(c.hosts, getenv("QIM_CQL_HOSTS"))
	if hosts == "" {
		return cfg, fmt.Errorf("%s: no CQL contact point: pass --cql-hosts or set QIM_CQL_HOSTS", cmd)
	}
	cfg.Hosts = strings.Split(hosts, ",")
	auth, err := services.StoreAuthFrom(getenv)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", cmd, err)
	}
	cfg.Auth = auth.CQL
	return cfg, nil
}
