"""The TensorBoard plugin's own controller (``controller``): a TensorBoard ->
its Service and pod, and its status.

The job's side of it (a job's ``spec.tensorboardSpec`` -> the TensorBoard it
owns, and ``status.tensorboard``) is the pure integration in
``reconcilers/integrations/tensorboard.py``.
"""
