export class Fine {
  ok(): number { return 1; }
  broken(: number { return
}

export function after(x: number) {
  return x;
}
