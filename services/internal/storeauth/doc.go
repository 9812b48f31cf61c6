// Package storeauth owns how a Q-IM process authenticates to its stores and encrypts the
// connection: the Redis ACL user and password and TLS (go-redis), Kafka SASL (SCRAM or PLAIN)
// and TLS (franz-go), the CQL username and password and TLS (gocql). It turns one Config, read
// from environment variables (each password also from a file: QIM_REDIS_PASSWORD_FILE, …), into
// the options of each client library; an empty Config changes nothing, so a development stack on
// loopback keeps working without credentials.
//
// What it must never do: print a password (config.Secret prints a digest, and no error here
// carries one), connect anywhere, or fall back to plaintext or to no authentication when a
// setting it was given cannot be used: an unreadable CA file or half a credential is an error
// naming the variable, never a silent downgrade.
package storeauth
