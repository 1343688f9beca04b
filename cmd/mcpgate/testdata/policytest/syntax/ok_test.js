function test_ok() {
  mcpgate.assert(true, "true");
}

let broken = ;
