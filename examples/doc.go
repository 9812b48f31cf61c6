// Package examples holds the tests of the example programs below it. Each example is a module of
// its own, as a product's would be; graph_test.go builds them and checks what they inherit.
package examples
