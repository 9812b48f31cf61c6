package lint

// sourceRules are the contract rules that read the tree's source directly. Each one's Reason is
// the short form of the rule's "why"; the long form is the comment on its check function.
func sourceRules() []checker {
	return []checker{
		{name: "aliases", allowlisted: true, run: checkAliases,
			reason: "one name per concept: retired names may appear in docs only"},
		{name: "cql-delete", allowlisted: true, run: checkCQLDelete,
			reason: "store data is removed by TTL or crypto-erase, never by CQL DELETE (tombstones)"},
		{name: "unread-subtraction", allowlisted: true, run: checkUnreadSubtraction,
			reason: "conversation_seq has holes: latest-read counts recalled and own messages as unread"},
		{name: "contract-constants", allowlisted: true, run: checkContractConstants,
			reason: "contract constants, topic names and domain strings are declared in contract/ only"},
		{name: "secret-logging", allowlisted: true, run: checkSecretLogging,
			reason: "logs never carry tokens, keys or bodies: wrap them in obs.SecretDigest/BodyShape/TextShape"},
	}
}
