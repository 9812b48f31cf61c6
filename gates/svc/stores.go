package svc

import (
	"github.com/qim-dev/qim/gates/stack"
)

// storeGroups are the store credentials of a secure stack, one group per store: the variable
// that tells whether a program reads the store's credentials at all, and the group's values.
func storeGroups(sec *stack.SecureEndpoints) []struct {
	probe string
	env   map[string]string
} {
	return []struct {
		probe string
		env   map[string]string
	}{
		{"QIM_REDIS_USERNAME", map[string]string{"QIM_REDIS_USERNAME": sec.RedisUser,
			"QIM_REDIS_PASSWORD_FILE": sec.RedisPasswordFile, "QIM_REDIS_TLS_CA": sec.CAFile}},
		{"QIM_KAFKA_SASL_MECHANISM", map[string]string{"QIM_KAFKA_SASL_MECHANISM": sec.KafkaSASLMechanism,
			"QIM_KAFKA_USERNAME": sec.KafkaUser, "QIM_KAFKA_PASSWORD_FILE": sec.KafkaPasswordFile, "QIM_KAFKA_TLS_CA": sec.CAFile}},
		{"QIM_CQL_USERNAME", map[string]string{"QIM_CQL_USERNAME": sec.CQLUser,
			"QIM_CQL_PASSWORD_FILE": sec.CQLPasswordFile, "QIM_CQL_TLS_CA": sec.CAFile}},
	}
}

// storeEnv adds a secure stack's credentials to the variables of program (a qim subcommand):
// those of each store the program reads, as its --help lists them. A program is never given a
// store's variables it does not read, since it would refuse them; a binary from before store
// credentials (an A/B baseline) gets none and cannot run on a secure stack.
func (s *Set) storeEnv(program string, vars map[string]string) {
	if s.ep.Secure == nil {
		return
	}
	for _, g := range storeGroups(s.ep.Secure) {
		if !knows(s.bin, program, g.probe) {
			continue
		}
		for k, v := range g.env {
			vars[k] = v
		}
	}
}
