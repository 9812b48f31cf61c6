package services

import "github.com/qim-dev/qim/services/internal/storeauth"

// StoreAuth is the credentials and TLS of Redis, Kafka and CQL, read from the variables the
// services read (QIM_REDIS_USERNAME, QIM_KAFKA_SASL_MECHANISM, QIM_CQL_TLS_CA, …): qimctl's
// store commands reach a deployment's stores exactly as its services do.
type StoreAuth = storeauth.Config

// StoreAuthFrom reads and checks StoreAuth through getenv (an unset variable reads as empty).
// A half credential or an unreadable CA file is an error naming the variable.
func StoreAuthFrom(getenv func(string) string) (StoreAuth, error) {
	return storeauth.Load(func(name string) (string, bool) {
		v := getenv(name)
		return v, v != ""
	})
}
