// Package e2etest is what the end-to-end tests under e2e/ share: building
// and running `trawler dev` as a user does, running the development stack
// inside the test process instead, a REST client of the API, and polling
// with a deadline.
package e2etest
