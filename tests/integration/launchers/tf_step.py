"""One MultiWorkerMirroredStrategy training step of a tiny linear model, as a
TensorFlowTrainingJob's workers run it from their TF_CONFIG.

Each worker feeds its own data (all ones times its task index + 1), so the
mean of the gradients is only right when the workers' all-reduce ran; each
prints the weight after the step, which every worker must agree on.
"""

import json
import os

import tensorflow as tf

task = json.loads(os.environ["TF_CONFIG"])["task"]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    w = tf.Variable(tf.zeros((4, 1)), aggregation=tf.VariableAggregation.MEAN)


@tf.function
def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
    def replica_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        w.assign_sub(0.1 * tape.gradient(loss, w))  # MEAN: the workers' updates averaged
        return loss

    losses = strategy.run(replica_step, args=(x, y))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


scale = float(task["index"] + 1)
loss = step(tf.fill((2, 4), scale), tf.fill((2, 1), 2.0 * scale))
print(
    f"t9k-tf {task['type']}-{task['index']}: replicas={strategy.num_replicas_in_sync} "
    f"loss={float(loss):.4f} w={float(w.numpy()[0][0]):.4f}",
    flush=True,
)
