import React, { useState } from "react";

type Props = { tasks: string[]; onPick?: (id: string) => void };

/** Lists tasks. */
export function TaskList({ tasks, onPick }: Props) {
  const [picked, setPicked] = useState<string | null>(null);
  return (
    <ul className="tasks">
      {tasks.map((t) => (
        <li key={t} onClick={() => { setPicked(t); onPick?.(t); }}>
          {t === picked ? <b>{t}</b> : t}
        </li>
      ))}
    </ul>
  );
}

export const Empty = () => <p>No tasks</p>;

export default class Panel extends React.Component<Props> {
  render() {
    return <TaskList {...this.props} />;
  }
}
