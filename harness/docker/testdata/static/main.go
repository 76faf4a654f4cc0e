// Command static is a program built static for the docker runtime's tests
// of bring-your-own programs.
package main

func main() {}
