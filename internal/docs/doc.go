// Package docs holds no code: its test keeps the project's front door
// short and every page of its documentation reachable and linked right.
package docs
