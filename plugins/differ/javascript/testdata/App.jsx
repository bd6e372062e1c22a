import React, { useEffect, useState } from "react";
import { Store } from "./store";

/** The task list. */
export function App({ root }) {
  const [tasks, setTasks] = useState([]);
  useEffect(() => {
    Store.open(root).load().then((s) => setTasks([...s]));
  }, [root]);
  return (
    <main>
      <h1>Tasks</h1>
      {tasks.length === 0 ? <Empty /> : <List tasks={tasks} />}
    </main>
  );
}

const Empty = () => <p className="empty">No tasks yet</p>;

export const List = ({ tasks }) => (
  <ul>
    {tasks.map((t) => <li key={t.id}>{t.title}</li>)}
  </ul>
);

export default App;
