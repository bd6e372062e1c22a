pub struct Fine {
    a: u32,
}

impl Fine {
    pub fn ok(&self) -> u32 { self.a }

    pub fn broken(&self -> u32 {
        let x = ;
    }
}

fn after() {}
