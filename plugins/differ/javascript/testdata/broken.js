function fine() {
  return 1;
}

class Half {
  ok() { return 2; }
  broken( { return
}

function after() {}
